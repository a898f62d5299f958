//! The pool connection: its transport (plain or Noise), its setup (`SetupConnection`,
//! extensions) and the probe of a pool the proxy may move to.

use std::io;
use std::time::Duration;

use futures::future::Either;
use futures::{Sink, SinkExt, Stream, StreamExt};
use sv2c_binary::messages::{
    RequestExtensions, RequestExtensionsError, RequestExtensionsSuccess, SetupConnection,
    SetupConnectionError, SetupConnectionSuccess,
};
use sv2c_binary::{MessageType, Protocol, Seq064K, Str0255};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{self, AuthorityPublicKey, Initiator, NoiseCodec};
use sv2c_codec::{CodecError, Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use super::messages::Upward;
use super::shared::{ProxyConfig, ProxyError};

/// Turns the upstream byte stream into a plain frame transport: `Framed` +
/// [`FrameCodec`] on the shared pool ([`upstream_noise_transport`] is the encrypted one).
///
/// # Errors
/// None for the plain transport; the signature matches the encrypted one.
pub async fn upstream_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
) -> Result<Framed<S, FrameCodec>, ProxyError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Ok(Framed::new(
        stream,
        FrameCodec::new(pool.clone()).max_payload(max_payload),
    ))
}

/// Turns the upstream byte stream into an encrypted frame transport: runs the Noise NX
/// handshake as the initiator, checks that the pool's certificate is signed by
/// `authority` and valid now, and returns a `Framed` with the same [`FrameCodec`] inside
/// a [`NoiseCodec`].
///
/// # Errors
/// [`ProxyError::Handshake`]: the certificate does not verify (wrong authority key,
/// expired), the pool closes the connection or sends no valid answer within `timeout`
/// (e.g. it does not speak Noise).
pub async fn upstream_noise_transport<S>(
    stream: S,
    pool: &BufferPool,
    max_payload: usize,
    authority: AuthorityPublicKey,
    timeout: Duration,
) -> Result<Framed<S, NoiseCodec<FrameCodec>>, ProxyError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let initiator = Initiator::new(authority).map_err(|e| ProxyError::Handshake(e.into()))?;
    let codec = FrameCodec::new(pool.clone()).max_payload(max_payload);
    match tokio::time::timeout(timeout, noise::connect(stream, initiator, codec)).await {
        Ok(Ok(framed)) => Ok(framed),
        Ok(Err(e)) => Err(ProxyError::Handshake(e)),
        Err(_) => Err(ProxyError::Handshake(CodecError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no handshake answer within {timeout:?}"),
        )))),
    }
}

/// The pool connection on `stream` as frames, as [`ProxyConfig::upstream_noise`] has it:
/// plain ([`upstream_transport`]) or encrypted ([`upstream_noise_transport`], the
/// handshake within [`ProxyConfig::upstream_setup_timeout`]).
///
/// # Errors
/// As [`upstream_noise_transport`].
pub(crate) async fn transport<S>(
    stream: S,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<
    impl Stream<Item = Result<Frame, CodecError>>
    + Sink<Frame, Error = CodecError>
    + Sink<Upward, Error = CodecError>
    + Unpin
    + Send
    + 'static,
    ProxyError,
>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let max = config.max_upstream_payload;
    Ok(match config.upstream_noise {
        None => Either::Left(upstream_transport(stream, pool, max).await?),
        Some(authority) => Either::Right(
            upstream_noise_transport(stream, pool, max, authority, config.upstream_setup_timeout)
                .await?,
        ),
    })
}

/// One pool of the ordered list [`supervise_upstreams`](super::supervise_upstreams) works through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The pool, `HOST:PORT` (an IPv6 host in brackets).
    pub address: String,
    /// The pool's authority key: its connection uses Noise NX and its certificate must be
    /// signed by this key (`None`: plain TCP).
    pub authority: Option<sv2c_codec::noise::AuthorityPublicKey>,
}

/// The host and port of `HOST:PORT` (the host without IPv6 brackets).
pub(super) fn endpoint(address: &str) -> Option<(String, u16)> {
    let (host, port) = address.rsplit_once(':')?;
    Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
}

/// Whether `upstream` answers as a pool the proxy could use: a dial, the Noise handshake
/// if it has an authority key, and `SetupConnection` answered with success, all within
/// [`ProxyConfig::upstream_setup_timeout`]; the connection is then closed.
///
/// # Errors
/// What [`Proxy::start`](super::Proxy::start) would meet: the dial fails, the handshake
/// fails, the pool refuses or does not answer in time.
pub(crate) async fn probe(upstream: &Upstream, config: &ProxyConfig) -> Result<(), ProxyError> {
    let limit = config.upstream_setup_timeout;
    let mut config = config.clone();
    if let Some((host, port)) = endpoint(&upstream.address) {
        (config.upstream_host, config.upstream_port) = (host, port);
    }
    let pool = BufferPool::new(4, config.slot_size)?;
    let dial = tokio::net::TcpStream::connect(upstream.address.as_str());
    let tcp = match tokio::time::timeout(limit, dial).await {
        Ok(tcp) => tcp?,
        Err(_) => {
            let late = format!("no connection within {limit:?}");
            return Err(io::Error::new(io::ErrorKind::TimedOut, late).into());
        }
    };
    config.upstream_noise = upstream.authority;
    let mut up = transport(tcp, &pool, &config).await?;
    setup_upstream(&mut up, &pool, &config).await?;
    Ok(())
}

/// Sends the proxy's `SetupConnection` (Mining, version 2, [`ProxyConfig::upstream_flags`])
/// and waits for the pool's answer.
///
/// # Errors
/// [`ProxyError::Upstream`] if the pool answers `SetupConnection.Error` or anything else,
/// [`ProxyError::UpstreamTimeout`] after [`ProxyConfig::upstream_setup_timeout`], or the
/// connection's error.
pub async fn setup_upstream<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<SetupConnectionSuccess, ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    let text = |s: &str| Str0255::try_from(s).map_err(|e| ProxyError::Upstream(e.to_string()));
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: config.upstream_flags,
        endpoint_host: text(&config.upstream_host)?,
        endpoint_port: config.upstream_port,
        vendor: text("sv2c")?,
        hardware_version: text("sv2c-roles proxy")?,
        firmware: text(env!("CARGO_PKG_VERSION"))?,
        device_id: text("")?,
    };
    framed.send(Frame::from_message(&setup, pool)?).await?;
    let answer = tokio::time::timeout(config.upstream_setup_timeout, framed.next())
        .await
        .map_err(|_| ProxyError::UpstreamTimeout)?;
    let frame = match answer {
        Some(frame) => frame?,
        None => return Err(ProxyError::Upstream("closed during setup".into())),
    };
    let h = frame.header();
    match (h.extension_id(), h.msg_type()) {
        (0, SetupConnectionSuccess::MSG_TYPE) => Ok(frame.decode::<SetupConnectionSuccess>()?),
        (0, SetupConnectionError::MSG_TYPE) => {
            let e = frame.decode::<SetupConnectionError>()?;
            Err(ProxyError::Upstream(format!(
                "SetupConnection refused: {} (flags {:#x})",
                String::from_utf8_lossy(e.error_code.as_bytes()),
                e.flags
            )))
        }
        _ => Err(ProxyError::Upstream(format!(
            "expected SetupConnection.Success, got {:?}",
            h
        ))),
    }
}

/// Extensions the proxy passes on to miners when the pool grants them: 0x0002 only, whose
/// TLV the proxy forwards untouched inside the share frames.
const PASSED_ON: &[u16] = &[sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING];

/// Asks the pool for [`ProxyConfig::upstream_extensions`] (`RequestExtensions`, right
/// after `SetupConnection.Success`) and returns those granted that the proxy can pass on
/// to miners. Nothing is asked if the list is empty; a pool that answers with
/// `RequestExtensions.Error`, or not within [`ProxyConfig::extensions_timeout`], grants
/// nothing.
///
/// # Errors
/// [`ProxyError::Upstream`] if the pool answers anything else or closes, or the
/// connection's error.
pub async fn request_upstream_extensions<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<Vec<u16>, ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    match request_extensions(framed, pool, config).await? {
        (granted, None) => Ok(granted),
        (_, Some(frame)) => Err(ProxyError::Upstream(format!(
            "expected RequestExtensions.Success or .Error, got {:?}",
            frame.header()
        ))),
    }
}

/// [`request_upstream_extensions`], where a pool that answers with anything else (it
/// ignored the request, as the spec allows, and sent e.g. `Reconnect`) grants nothing:
/// that frame is returned, to be handled as if it came next ([`Replay`]).
pub(crate) async fn request_extensions<F>(
    framed: &mut F,
    pool: &BufferPool,
    config: &ProxyConfig,
) -> Result<(Vec<u16>, Option<Frame>), ProxyError>
where
    F: Stream<Item = Result<Frame, CodecError>> + Sink<Frame, Error = CodecError> + Unpin,
{
    if config.upstream_extensions.is_empty() {
        return Ok((Vec::new(), None));
    }
    let request = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&config.upstream_extensions)
            .map_err(|e| ProxyError::Upstream(e.to_string()))?,
    };
    framed.send(Frame::from_message(&request, pool)?).await?;
    let Ok(answer) = tokio::time::timeout(config.extensions_timeout, framed.next()).await else {
        tracing::warn!("the pool did not answer RequestExtensions: no extensions");
        return Ok((Vec::new(), None));
    };
    let frame = match answer {
        Some(frame) => frame?,
        None => return Err(ProxyError::Upstream("closed during setup".into())),
    };
    let h = frame.header();
    match (h.extension_id(), h.msg_type()) {
        (RequestExtensionsSuccess::EXTENSION_TYPE, RequestExtensionsSuccess::MSG_TYPE) => {
            let granted = frame.decode::<RequestExtensionsSuccess>()?;
            let granted = granted
                .supported_extensions
                .to_vec()
                .into_iter()
                .filter(|id| PASSED_ON.contains(id) && config.upstream_extensions.contains(id))
                .collect();
            Ok((granted, None))
        }
        (RequestExtensionsError::EXTENSION_TYPE, RequestExtensionsError::MSG_TYPE) => {
            let e = frame.decode::<RequestExtensionsError>()?;
            tracing::warn!(
                "the pool refused extensions {:?} (it requires {:?})",
                e.unsupported_extensions.to_vec(),
                e.required_extensions.to_vec()
            );
            Ok((Vec::new(), None))
        }
        _ => {
            tracing::warn!("the pool answered RequestExtensions with {h:?}: no extensions");
            Ok((Vec::new(), Some(frame)))
        }
    }
}

/// The pool connection with a frame that came early (before the answer the proxy waited
/// for) put back in front of what the pool sends next.
pub(crate) struct Replay<F> {
    early: Option<Frame>,
    inner: F,
}

impl<F> Replay<F> {
    pub(crate) fn new(inner: F, early: Option<Frame>) -> Self {
        Replay { early, inner }
    }
}

impl<F> Stream for Replay<F>
where
    F: Stream<Item = Result<Frame, CodecError>> + Unpin,
{
    type Item = Result<Frame, CodecError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Some(frame) = self.early.take() {
            return std::task::Poll::Ready(Some(Ok(frame)));
        }
        std::pin::Pin::new(&mut self.inner).poll_next(cx)
    }
}

impl<T, F> Sink<T> for Replay<F>
where
    F: Sink<T, Error = CodecError> + Unpin,
{
    type Error = CodecError;

    fn poll_ready(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_ready(cx)
    }

    fn start_send(mut self: std::pin::Pin<&mut Self>, item: T) -> Result<(), CodecError> {
        std::pin::Pin::new(&mut self.inner).start_send(item)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), CodecError>> {
        std::pin::Pin::new(&mut self.inner).poll_close(cx)
    }
}
