//! The signals that stop a role: Ctrl-C (SIGINT) and, on Unix, SIGTERM.
//!
//! The programs wait on [`signal`] and then shut their role down gracefully: stop
//! accepting, send every connected client `Reconnect` (spec §3.1: empty host and port 0,
//! "this same endpoint", so that a restarted server gets its clients back), write what is
//! queued and close ([`Pool::shutdown`](crate::pool::Pool::shutdown),
//! [`Proxy::shutdown`](crate::proxy::Proxy::shutdown)).

/// Resolves when the process receives SIGTERM or SIGINT (Ctrl-C). The handlers are
/// installed when this is called, not when the future is first polled: call it before
/// the program says it is ready, so that a signal arriving at any later moment is waited
/// for instead of ending the process. Call it inside the runtime. If a handler cannot be
/// installed, that signal is not waited for (the other still is).
pub fn signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async fn wait(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        async move {
            tokio::select! {
                _ = wait(term) => {}
                _ = wait(int) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
