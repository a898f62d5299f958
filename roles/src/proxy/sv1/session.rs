//! One SV1 miner's session, sans-io: its requests answered, the router's messages for
//! its channel turned into SV1 lines, its difficulty. The connection task
//! ([`super::run`]) reads and writes; this decides.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use bytes::Bytes;

use sv2c_binary::messages::{
    NewExtendedMiningJob, OpenExtendedMiningChannel, OpenExtendedMiningChannelSuccess,
    OpenMiningChannelError, Reconnect, SetExtranoncePrefix, SetNewPrevHash, SetTarget,
    SubmitSharesError, SubmitSharesSuccess,
};
use sv2c_binary::tlv::{TlvBuf, WithTlvs};
use sv2c_binary::{MessageType, Str0255, U256};
use sv2c_channels::client::Hashed;
use sv2c_channels::pow::{difficulty_to_target, harder, target_to_difficulty};
use sv2c_channels::server::BIP320_VERSION_MASK;
use sv2c_channels::vardiff::{Vardiff, VardiffConfig};
use sv2c_codec::Frame;
use sv2c_sv1::{
    Body, Configure, ConfigureResult, Id, Response, RpcError, SUBSCRIBE_EXTRANONCE, SetDifficulty,
    SetExtranonce, SetVersionMask, Submit, SubscribeResult, Sv1Message, VERSION_ROLLING,
};

use super::identity;
use super::work::{Checked, Submitted, Work, errors};
use crate::proxy::aggregate::MINER_EXTRANONCE_LEN;
use crate::proxy::messages::ToDownstream;
use crate::proxy::routing::ConnId;
use crate::proxy::shared::{Counters, Shared, Sv1WorkerCounts};

/// Worker names one connection may authorize.
const MAX_WORKERS: usize = 8;

/// What the session asks of the router.
#[derive(Debug)]
pub(crate) enum Request {
    /// Open the miner's channel.
    Open(OpenExtendedMiningChannel),
    /// A share to forward (a `SubmitSharesExtended` frame) and its hash, for the router
    /// to check against its own state without hashing it again.
    Share(Frame, Hashed),
}

/// What the connection does after an event.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Lines to write, in order.
    pub(crate) lines: Vec<Sv1Message>,
    /// A job's `mining.notify` line (the worker's, encoded once), written after `lines`.
    pub(crate) job: Option<Bytes>,
    /// Requests for the router.
    pub(crate) requests: Vec<Request>,
    /// Write the lines, then close the connection.
    pub(crate) close: bool,
}

impl Effects {
    /// Nothing to write, ask or close.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.job.is_none() && self.requests.is_empty() && !self.close
    }

    fn say(&mut self, body: Body) {
        self.lines.push(Sv1Message::notification(body));
    }

    fn answer(&mut self, id: Id, response: Response) {
        self.lines.push(Sv1Message::response(id, response));
    }
}

/// One SV1 miner's state (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Session {
    conn: ConnId,
    shared: Arc<Shared>,
    /// The id of `mining.subscribe`, answered once the channel is open.
    subscribe: Option<Id>,
    /// `mining.authorize` ids that came while the subscribe waited: answered right after
    /// it (firmware that pipelines both may expect the subscribe's answer first).
    deferred: Vec<Id>,
    /// Authorized names, their counters (under the name as fitted to 32 bytes) and their
    /// 0x0002 TLVs (when the pool granted 0x0002).
    workers: Vec<(String, Arc<Sv1WorkerCounts>, Option<TlvBuf>)>,
    /// The version bits the miner may roll (`mining.configure`); 0: none.
    version_mask: u32,
    /// The miner takes `mining.set_extranonce` (`mining.extranonce.subscribe`, or the
    /// `subscribe-extranonce` extension of `mining.configure`).
    extranonce_subscribed: bool,
    /// Whether the last job allowed version rolling (a miner that negotiated it is sent
    /// `mining.set_version_mask` when this changes).
    rolling_allowed: bool,
    suggested: Option<f64>,
    work: Option<Work>,
    target: U256,
    /// The target before the last change: still accepted until the next job.
    previous: Option<U256>,
    vardiff: Option<Vardiff>,
    started: Instant,
    last_job_sent: Instant,
}

impl Session {
    /// A session for connection `conn`.
    pub(crate) fn new(conn: ConnId, shared: Arc<Shared>) -> Session {
        let now = Instant::now();
        Session {
            conn,
            shared,
            subscribe: None,
            deferred: Vec::new(),
            workers: Vec::new(),
            version_mask: 0,
            extranonce_subscribed: false,
            rolling_allowed: true,
            suggested: None,
            work: None,
            target: U256([0xff; 32]),
            previous: None,
            vardiff: None,
            started: now,
            last_job_sent: now,
        }
    }

    /// Whether the miner subscribed (its channel is open).
    pub(crate) fn subscribed(&self) -> bool {
        self.work.is_some()
    }

    /// Whether so many answers wait that no more lines should be read.
    pub(crate) fn is_full(&self) -> bool {
        self.work.as_ref().is_some_and(Work::is_full)
    }

    /// One message from the miner.
    pub(crate) fn on_message(&mut self, msg: Sv1Message, fx: &mut Effects) {
        let Sv1Message { id, body, .. } = msg;
        match body {
            Body::Subscribe(_) => self.on_subscribe(id, fx),
            Body::Authorize(a) => {
                self.authorize(a.name);
                if self.subscribe.is_some() && self.deferred.len() < MAX_WORKERS {
                    self.deferred.push(id);
                } else {
                    fx.answer(id, Response::ok(true));
                }
            }
            Body::Configure(c) => {
                let result = self.configure(&c);
                fx.answer(id, Response::configure(&result));
            }
            Body::SuggestDifficulty(s) => {
                self.suggested = Some(s.difficulty);
                if self.work.is_some() {
                    self.set_difficulty(s.difficulty, fx);
                }
                if id != Id::Null {
                    fx.answer(id, Response::ok(true));
                }
            }
            // Its extranonce changes only when the proxy moves to another pool.
            Body::ExtranonceSubscribe => {
                self.extranonce_subscribed = true;
                fx.answer(id, Response::ok(true));
            }
            Body::Submit(s) => self.on_submit(id, s, fx),
            Body::Response(_) => {}
            _ if id != Id::Null => {
                fx.answer(
                    id,
                    Response::error(RpcError::new(errors::OTHER, "not supported")),
                );
            }
            _ => {}
        }
    }

    fn on_subscribe(&mut self, id: Id, fx: &mut Effects) {
        if let Some(work) = &self.work {
            let result = subscribe_result(self.conn, work);
            return fx.answer(id, Response::subscribe(&result));
        }
        if self.subscribe.is_some() {
            // Asked again before the channel opened: the first request is answered.
            let e = RpcError::new(errors::OTHER, "subscription in progress");
            return fx.answer(id, Response::error(e));
        }
        self.subscribe = Some(id);
        let cap = self.shared.config.sv1.max_extranonce2_size;
        fx.requests.push(Request::Open(OpenExtendedMiningChannel {
            request_id: 1,
            user_identity: Str0255::default(),
            nominal_hash_rate: 0.0,
            max_target: U256([0xff; 32]),
            min_extranonce_size: u16::try_from(cap.min(MINER_EXTRANONCE_LEN)).unwrap_or(0),
        }));
    }

    fn authorize(&mut self, name: String) {
        if self.workers.iter().any(|(n, _, _)| *n == name) {
            return;
        }
        let granted = self
            .shared
            .upstream_extensions()
            .contains(&sv2c_channels::extensions::WORKER_SPECIFIC_HASHRATE_TRACKING);
        let tlv = if granted { identity::tlv(&name) } else { None };
        if self.workers.len() == MAX_WORKERS {
            self.workers.pop();
        }
        let counts = match self.shared.sv1_workers.lock() {
            Ok(mut workers) => workers.counts(&identity::fit(&name)),
            Err(poisoned) => poisoned.into_inner().counts(&identity::fit(&name)),
        };
        // Most miners authorize one name: room for one at a time.
        self.workers.reserve_exact(1);
        self.workers.push((name, counts, tlv));
    }

    /// `mining.configure` (BIP 310): version rolling within the BIP 320 bits, the
    /// `set_extranonce` subscription, a minimum difficulty taken as a suggestion.
    fn configure(&mut self, c: &Configure) -> ConfigureResult {
        let mut result = ConfigureResult::default();
        if c.has_extension(VERSION_ROLLING) {
            let asked = c.version_rolling_mask.unwrap_or(BIP320_VERSION_MASK);
            self.version_mask = asked & BIP320_VERSION_MASK;
            result.version_rolling = Some(self.version_mask != 0);
            result.version_rolling_mask = Some(self.version_mask);
        }
        if c.has_extension(sv2c_sv1::MINIMUM_DIFFICULTY) {
            result.minimum_difficulty = Some(c.minimum_difficulty.is_some());
            if let Some(d) = c.minimum_difficulty {
                self.suggested = Some(d);
            }
        }
        if c.has_extension(SUBSCRIBE_EXTRANONCE) {
            self.extranonce_subscribed = true;
            result
                .other
                .insert(SUBSCRIBE_EXTRANONCE.into(), serde_json::Value::Bool(true));
        }
        result
    }

    fn on_submit(&mut self, id: Id, s: Submit, fx: &mut Effects) {
        let Some(work) = self.work.as_mut() else {
            let e = RpcError::new(errors::NOT_SUBSCRIBED, "not subscribed");
            return fx.answer(id, Response::error(e));
        };
        let Some((_, counts, tlv)) = self.workers.iter().find(|(n, _, _)| *n == s.worker) else {
            // In order behind the shares before it.
            let e = RpcError::new(errors::UNAUTHORIZED, "unauthorized worker");
            work.expect(id, None, Some(Err(e)));
            work.answers(&mut fx.lines);
            return;
        };
        let share = Submitted {
            job_id: s.job_id,
            extranonce2: s.extranonce2,
            ntime: s.ntime,
            nonce: s.nonce,
            version_bits: s.version_bits,
        };
        // The easier of the current and the previous target, until the next job.
        let target = match &self.previous {
            Some(p) if harder(p, &self.target) == self.target => *p,
            _ => self.target,
        };
        let counters = &self.shared.counters;
        let checked = work.check(&share, self.version_mask, &target);
        let count = match &checked {
            Ok(Checked::Local) => &counts.local,
            Ok(Checked::Forward(..)) => &counts.forwarded,
            Err(_) => &counts.refused,
        };
        count.fetch_add(1, Relaxed);
        if let (Ok(_), Some(v)) = (&checked, &mut self.vardiff) {
            v.on_share();
        }
        match checked {
            Ok(Checked::Local) => {
                Counters::add(&counters.sv1_shares_local, 1);
                work.expect(id, None, Some(Ok(())));
            }
            Ok(Checked::Forward(m, hashed)) => {
                let sequence = m.sequence_number;
                let mut msg = WithTlvs::new(m);
                if let Some(tlv) = tlv {
                    msg.push(tlv.clone());
                }
                match Frame::from_message(&msg, &self.shared.pool) {
                    Ok(frame) => {
                        fx.requests.push(Request::Share(frame, hashed));
                        work.expect(id, Some(sequence), None);
                    }
                    Err(_) => work.expect(
                        id,
                        None,
                        Some(Err(RpcError::new(errors::OTHER, "internal-error"))),
                    ),
                }
            }
            Err(e) => {
                counters.shares_rejected.count(e.message.as_bytes());
                work.expect(id, None, Some(Err(e)));
            }
        }
        work.answers(&mut fx.lines);
    }

    /// What the router sent for this miner.
    pub(crate) fn on_router(&mut self, msg: ToDownstream, fx: &mut Effects) {
        match msg {
            ToDownstream::Opened { reply, .. } => {
                match reply.decode::<OpenExtendedMiningChannelSuccess>() {
                    Ok(ok) => self.on_opened(&ok, fx),
                    Err(_) => fx.close = true,
                }
            }
            ToDownstream::Refused { reply } => {
                let code = reply
                    .decode::<OpenMiningChannelError>()
                    .map(|e| String::from_utf8_lossy(e.error_code.as_bytes()).into_owned())
                    .unwrap_or_default();
                if let Some(id) = self.subscribe.take() {
                    fx.answer(id, Response::error(RpcError::new(errors::OTHER, code)));
                }
                for id in std::mem::take(&mut self.deferred) {
                    fx.answer(id, Response::ok(true));
                }
                fx.close = true;
            }
            ToDownstream::Frame(frame) => self.on_frame(&frame, fx),
            ToDownstream::Closed { .. } => fx.close = true,
        }
    }

    fn on_opened(&mut self, ok: &OpenExtendedMiningChannelSuccess, fx: &mut Effects) {
        let cap = self.shared.config.sv1.max_extranonce2_size;
        let Some(work) = Work::new(ok, cap, self.shared.sv1_jobs.get()) else {
            fx.close = true;
            return;
        };
        if let Some(id) = self.subscribe.take() {
            fx.answer(id, Response::subscribe(&subscribe_result(self.conn, &work)));
        }
        for id in std::mem::take(&mut self.deferred) {
            fx.answer(id, Response::ok(true));
        }
        let difficulty = self
            .suggested
            .unwrap_or_else(|| target_to_difficulty(work.upstream_target()));
        self.work = Some(work);
        self.set_difficulty(difficulty, fx);
        self.previous = None;
    }

    /// A frame the router sent on the miner's channel.
    fn on_frame(&mut self, frame: &Frame, fx: &mut Effects) {
        let h = frame.header();
        if h.extension_id() != 0 {
            return;
        }
        if (h.channel_msg(), h.msg_type()) == (false, Reconnect::MSG_TYPE) {
            fx.say(Body::Reconnect(sv2c_sv1::Reconnect::default()));
            fx.close = true;
            return;
        }
        let Some(work) = self.work.as_mut() else {
            return;
        };
        if (h.channel_msg(), h.msg_type()) == (true, SetExtranoncePrefix::MSG_TYPE) {
            // The proxy moved to another pool: the miner's `extranonce1` changes, which
            // SV1 can only tell a miner that subscribed to it; any other is sent away
            // (to come back with a new subscription).
            let prefix = frame.decode::<SetExtranoncePrefix>().ok();
            let moved = self.extranonce_subscribed
                && prefix.is_some_and(|m| {
                    let jobs = self.shared.sv1_jobs.get();
                    work.set_prefix(m.extranonce_prefix.as_slice(), jobs)
                });
            if moved {
                fx.say(Body::SetExtranonce(SetExtranonce {
                    extranonce1: work.extranonce1(),
                    extranonce2_size: work.extranonce2_size(),
                }));
            } else {
                fx.say(Body::Reconnect(sv2c_sv1::Reconnect::default()));
                fx.close = true;
            }
            return;
        }
        let notify = match h.msg_type() {
            // The router published the worker's jobs before it sent this frame.
            NewExtendedMiningJob::MSG_TYPE | SetNewPrevHash::MSG_TYPE | SetTarget::MSG_TYPE => {
                let jobs = self.shared.sv1_jobs.get();
                if jobs.rolling_allowed != self.rolling_allowed {
                    self.rolling_allowed = jobs.rolling_allowed;
                    if self.version_mask != 0 {
                        let mask = if jobs.rolling_allowed {
                            self.version_mask
                        } else {
                            0
                        };
                        fx.say(Body::SetVersionMask(SetVersionMask { mask }));
                    }
                }
                work.on_jobs(jobs)
            }
            SubmitSharesSuccess::MSG_TYPE => {
                if let Ok(m) = frame.decode::<SubmitSharesSuccess>() {
                    work.on_success(m.last_sequence_number);
                }
                None
            }
            SubmitSharesError::MSG_TYPE => {
                if let Ok(m) = frame.decode::<SubmitSharesError>() {
                    let code = String::from_utf8_lossy(m.error_code.as_bytes());
                    work.on_error(m.sequence_number, &code);
                }
                None
            }
            _ => None,
        };
        work.answers(&mut fx.lines);
        if matches!(
            h.msg_type(),
            NewExtendedMiningJob::MSG_TYPE | SetNewPrevHash::MSG_TYPE | SetTarget::MSG_TYPE
        ) {
            self.follow_upstream(fx);
        }
        if let Some(n) = notify {
            self.send_job(n, fx);
        }
    }

    fn send_job(&mut self, line: Bytes, fx: &mut Effects) {
        self.previous = None;
        self.last_job_sent = Instant::now();
        fx.job = Some(line);
    }

    /// After the pool changed the upstream target: a miner without a suggested
    /// difficulty whose target is now harder than the upstream channel's is lowered to
    /// it (see [`Self::set_difficulty`]).
    fn follow_upstream(&mut self, fx: &mut Effects) {
        let Some(work) = self.work.as_ref().filter(|_| self.suggested.is_none()) else {
            return;
        };
        let upstream = *work.upstream_target();
        if harder(&self.target, &upstream) != upstream {
            self.set_difficulty(target_to_difficulty(&upstream), fx);
        }
    }

    /// Sets and sends the miner's difficulty (a power of two, rounded down, if so
    /// configured); a vardiff window starts there. For a miner that suggested none, the
    /// difficulty is at most the upstream channel's: a share meeting the pool's target is
    /// never one the miner keeps back. A suggestion is the miner's to make, kept as given.
    fn set_difficulty(&mut self, difficulty: f64, fx: &mut Effects) {
        if !(difficulty.is_finite() && difficulty > 0.0) {
            return;
        }
        let difficulty = match self.work.as_ref().filter(|_| self.suggested.is_none()) {
            Some(work) => difficulty.min(target_to_difficulty(work.upstream_target())),
            None => difficulty,
        };
        let config = &self.shared.config.sv1;
        let difficulty = if config.pow2_difficulty {
            2f64.powi(difficulty.log2().floor() as i32) // a small integer exponent
        } else {
            difficulty
        };
        let target = difficulty_to_target(difficulty);
        if target != self.target {
            self.previous = Some(self.target);
        }
        self.target = target;
        let vardiff = VardiffConfig {
            shares_per_minute: config.shares_per_minute,
            ..VardiffConfig::default()
        };
        self.vardiff = Some(Vardiff::new(vardiff, target, self.seconds()));
        fx.say(Body::SetDifficulty(SetDifficulty { difficulty }));
    }

    fn seconds(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Once a second or so: vardiff, and the job sent again to a miner that got none
    /// for [`Sv1Config::job_refresh`](crate::proxy::Sv1Config::job_refresh).
    pub(crate) fn on_tick(&mut self, fx: &mut Effects) {
        let now = self.seconds();
        if let Some(target) = self.vardiff.as_mut().and_then(|v| v.poll(now)) {
            self.set_difficulty(target_to_difficulty(&target), fx);
        }
        let refresh = self.shared.config.sv1.job_refresh;
        if self.last_job_sent.elapsed() >= refresh
            && let Some(job) = self.work.as_ref().and_then(Work::last_job)
        {
            self.last_job_sent = Instant::now();
            fx.job = Some(job);
        }
    }
}

/// The answer to `mining.subscribe`.
fn subscribe_result(conn: ConnId, work: &Work) -> SubscribeResult {
    let session = format!("{conn:x}");
    SubscribeResult {
        subscriptions: vec![
            ("mining.set_difficulty".into(), session.clone()),
            ("mining.notify".into(), session),
        ],
        extranonce1: work.extranonce1(),
        extranonce2_size: work.extranonce2_size(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::B032;
    use sv2c_sv1::{Authorize, Subscribe, SuggestDifficulty};

    fn request(id: u64, body: Body) -> Sv1Message {
        Sv1Message::request(id, body)
    }

    fn lines(fx: &Effects) -> Vec<String> {
        let job = fx
            .job
            .iter()
            .map(|j| String::from_utf8_lossy(j).into_owned());
        fx.lines
            .iter()
            .map(Sv1Message::to_line)
            .chain(job)
            .map(|l| l.trim_end().to_owned())
            .collect()
    }

    /// The router's answer to the open request: prefix `[1, 2, 3, 4]`, 12 bytes to roll.
    fn opened(shared: &Shared) -> ToDownstream {
        let ok = OpenExtendedMiningChannelSuccess {
            request_id: 1,
            channel_id: 2,
            target: U256([0xff; 32]),
            extranonce_size: 12,
            extranonce_prefix: B032::try_from(vec![1, 2, 3, 4]).unwrap(),
            group_channel_id: 1,
        };
        let reply = Frame::from_message(&ok, &shared.pool).unwrap();
        ToDownstream::Opened {
            downstream_channel: 2,
            upstream_channel: 2,
            reply,
        }
    }

    /// The proxy moved to another pool (the router's `SetExtranoncePrefix` on the
    /// miner's channel): a miner that subscribed to extranonce changes, with
    /// `mining.extranonce.subscribe` or in `mining.configure`, gets
    /// `mining.set_extranonce` (the new prefix and its zeros, the same
    /// `extranonce2_size`) and stays; any other gets `client.reconnect` and is closed.
    #[test]
    fn a_new_pool_is_set_extranonce_or_client_reconnect() {
        let shared = Arc::new(Shared::for_tests());
        let moved = SetExtranoncePrefix {
            channel_id: 2,
            extranonce_prefix: B032::try_from(vec![9, 9, 9, 1, 0, 0]).unwrap(),
        };
        let subscribe = |s: &mut Session, how: Option<Body>| {
            let mut fx = Effects::default();
            if let Some(how) = how {
                s.on_message(request(3, how), &mut fx);
            }
            s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
            s.on_router(opened(&shared), &mut fx);
            assert!(s.subscribed());
            let mut fx = Effects::default();
            let frame = Frame::from_message(&moved, &shared.pool).unwrap();
            s.on_router(ToDownstream::Frame(frame), &mut fx);
            (lines(&fx), fx.close)
        };
        let set =
            r#"{"id":null,"method":"mining.set_extranonce","params":["09090901000000000000",8]}"#;
        let mut asked = Session::new(7, shared.clone());
        assert_eq!(
            subscribe(&mut asked, Some(Body::ExtranonceSubscribe)),
            (vec![set.to_owned()], false)
        );
        let mut configured = Session::new(8, shared.clone());
        let c = Configure {
            extensions: vec![SUBSCRIBE_EXTRANONCE.into()],
            ..Configure::default()
        };
        assert_eq!(
            subscribe(&mut configured, Some(Body::Configure(c))),
            (vec![set.to_owned()], false)
        );
        let mut plain = Session::new(9, shared.clone());
        let reconnect = r#"{"id":null,"method":"client.reconnect","params":[]}"#;
        assert_eq!(
            subscribe(&mut plain, None),
            (vec![reconnect.to_owned()], true)
        );
    }

    /// After the move to another pool, a share on a job of the pool left is answered
    /// `stale-share` by the miner's task itself (never checked against the new pool's
    /// jobs, nor acknowledged locally).
    #[test]
    fn a_share_on_the_left_pools_job_is_stale() {
        use sv2c_binary::{B064K, Seq0255};
        use sv2c_channels::client::ClientChannel;
        let shared = Arc::new(Shared::for_tests());
        let mut s = Session::new(1, shared.clone());
        let mut fx = Effects::default();
        s.on_message(request(2, Body::ExtranonceSubscribe), &mut fx);
        let auth = Authorize {
            name: "w".into(),
            password: "x".into(),
        };
        s.on_message(request(3, Body::Authorize(auth)), &mut fx);
        s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
        let mut upstream = ClientChannel::new(vec![], 16, U256([0xff; 32]));
        shared.sv1_jobs.on_target(&upstream);
        s.on_router(opened(&shared), &mut fx);
        let job = NewExtendedMiningJob {
            channel_id: 2,
            job_id: 0x1a,
            min_ntime: None,
            version: 0x2000_0000,
            version_rolling_allowed: true,
            merkle_path: Seq0255::from_slice(&[]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(vec![0xaa, 0xbb]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(vec![0xcc]).unwrap(),
        };
        let tip = SetNewPrevHash {
            channel_id: 2,
            job_id: 0x1a,
            prev_hash: U256([1; 32]),
            min_ntime: 0x6650_ab12,
            nbits: 0x1703_a30c,
        };
        upstream.on_new_job(&job);
        shared.sv1_jobs.on_job(&upstream, &job);
        upstream.on_set_new_prev_hash(&tip);
        shared.sv1_jobs.on_prev_hash(&upstream, &tip);
        for frame in [
            Frame::from_message(&job, &shared.pool).unwrap(),
            Frame::from_message(&tip, &shared.pool).unwrap(),
        ] {
            s.on_router(ToDownstream::Frame(frame), &mut fx);
        }
        let submit = |id| {
            let share = Submit {
                worker: "w".into(),
                job_id: "1a".into(),
                extranonce2: sv2c_sv1::Extranonce::new(&[0; 8]).unwrap(),
                ntime: 0x6650_ab12,
                nonce: id as u32,
                version_bits: None,
            };
            request(id, Body::Submit(share))
        };
        // Meets the pool's target: forwarded, answered when the router answers.
        let mut fx = Effects::default();
        s.on_message(submit(10), &mut fx);
        assert!(matches!(fx.requests[..], [Request::Share(..)]));
        let ok = SubmitSharesSuccess {
            channel_id: 2,
            last_sequence_number: 0,
            new_submits_accepted_count: 1,
            new_shares_sum: 1,
        };
        let mut fx = Effects::default();
        let frame = Frame::from_message(&ok, &shared.pool).unwrap();
        s.on_router(ToDownstream::Frame(frame), &mut fx);
        assert_eq!(lines(&fx), [r#"{"id":10,"result":true,"error":null}"#]);

        let next = ClientChannel::new(vec![], 16, U256([0xff; 32]));
        shared.sv1_jobs.on_switch(&next, 0x100);
        let moved = SetExtranoncePrefix {
            channel_id: 2,
            extranonce_prefix: B032::try_from(vec![5, 6, 7, 8]).unwrap(),
        };
        let mut fx = Effects::default();
        let frame = Frame::from_message(&moved, &shared.pool).unwrap();
        s.on_router(ToDownstream::Frame(frame), &mut fx);
        assert!(!fx.close);
        s.on_message(submit(11), &mut fx);
        assert!(fx.requests.is_empty());
        assert_eq!(
            lines(&fx),
            [
                r#"{"id":null,"method":"mining.set_extranonce","params":["0506070800000000",8]}"#,
                r#"{"id":11,"result":null,"error":[21,"stale-share",null]}"#,
            ]
        );
    }

    /// WhatsMiner's order: `suggest_difficulty` first is answered, not a reason to close;
    /// the subscribe is answered once the channel opens, with `extranonce2_size` 8 and the
    /// rest of the miner's 12 bytes as zeros in `extranonce1`, then the suggested
    /// difficulty (an integer written as one).
    #[test]
    fn suggest_difficulty_before_subscribe() {
        let shared = Arc::new(Shared::for_tests());
        let mut s = Session::new(7, shared.clone());
        let mut fx = Effects::default();
        let suggest = SuggestDifficulty { difficulty: 512.0 };
        s.on_message(request(5, Body::SuggestDifficulty(suggest)), &mut fx);
        s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
        s.on_message(request(9, Body::Subscribe(Subscribe::default())), &mut fx);
        let auth = Authorize {
            name: "acct.w".into(),
            password: "x".into(),
        };
        s.on_message(request(2, Body::Authorize(auth)), &mut fx);
        assert!(!fx.close);
        assert!(matches!(fx.requests[..], [Request::Open(_)]));
        assert_eq!(
            lines(&fx),
            [
                r#"{"id":5,"result":true,"error":null}"#,
                r#"{"id":9,"result":null,"error":[20,"subscription in progress",null]}"#,
            ]
        );
        let mut fx = Effects::default();
        s.on_router(opened(&shared), &mut fx);
        assert_eq!(
            lines(&fx),
            [
                r#"{"id":1,"result":[[["mining.set_difficulty","7"],["mining.notify","7"]],"0102030400000000",8],"error":null}"#,
                r#"{"id":2,"result":true,"error":null}"#,
                r#"{"id":null,"method":"mining.set_difficulty","params":[512]}"#,
            ]
        );
        assert!(s.subscribed());
    }

    /// BIP 310: the mask asked is granted within `0x1fffe000`.
    #[test]
    fn version_rolling_within_bip_320() {
        let mut s = Session::new(1, Arc::new(Shared::for_tests()));
        let c = Configure {
            extensions: vec![VERSION_ROLLING.into(), SUBSCRIBE_EXTRANONCE.into()],
            version_rolling_mask: Some(0xffff_ffff),
            ..Configure::default()
        };
        let r = s.configure(&c);
        assert_eq!(r.version_rolling, Some(true));
        assert_eq!(r.version_rolling_mask, Some(0x1fff_e000));
        assert_eq!(s.version_mask, 0x1fff_e000);
    }

    /// A share before `mining.subscribe`, or for a worker not authorized, is refused with
    /// SV1's codes 25 and 24; the connection goes on.
    #[test]
    fn shares_need_a_subscription_and_a_worker() {
        let shared = Arc::new(Shared::for_tests());
        let mut s = Session::new(1, shared.clone());
        let mut fx = Effects::default();
        s.on_message(request(3, Body::Submit(Submit::default())), &mut fx);
        s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
        s.on_router(opened(&shared), &mut fx);
        fx.lines.clear();
        s.on_message(request(4, Body::Submit(Submit::default())), &mut fx);
        assert!(!fx.close);
        let got = lines(&fx);
        assert!(got[0].contains("[24,"), "{got:?}");
    }

    /// Jobs become `mining.notify`: a future job waits for its `SetNewPrevHash` and then
    /// goes with `clean_jobs`, the previous hash in SV1's word order; a job that allows no
    /// rolling makes a miner that negotiated it get `mining.set_version_mask` 0; a miner
    /// that got no job for `job_refresh` gets the last one again.
    #[test]
    fn jobs_become_notify_and_are_sent_again() {
        use sv2c_binary::{B064K, Seq0255};
        let shared = Arc::new(Shared::for_tests());
        let mut s = Session::new(1, shared.clone());
        let mut fx = Effects::default();
        let c = Configure {
            extensions: vec![VERSION_ROLLING.into()],
            ..Configure::default()
        };
        s.on_message(request(3, Body::Configure(c)), &mut fx);
        s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
        // The router publishes the upstream channel when it opens, its jobs before it
        // sends their frames.
        let mut upstream = sv2c_channels::client::ClientChannel::new(vec![], 16, U256([0xff; 32]));
        shared.sv1_jobs.on_target(&upstream);
        s.on_router(opened(&shared), &mut fx);
        let job = NewExtendedMiningJob {
            channel_id: 2,
            job_id: 0x1a,
            min_ntime: None,
            version: 0x2000_0000,
            version_rolling_allowed: false,
            merkle_path: Seq0255::from_slice(&[U256([7; 32])]).unwrap(),
            coinbase_tx_prefix: B064K::try_from(vec![0xaa, 0xbb]).unwrap(),
            coinbase_tx_suffix: B064K::try_from(vec![0xcc]).unwrap(),
        };
        let mut prev_hash = [0u8; 32];
        prev_hash[..4].copy_from_slice(&[1, 2, 3, 4]);
        let tip = SetNewPrevHash {
            channel_id: 2,
            job_id: 0x1a,
            prev_hash: U256(prev_hash),
            min_ntime: 0x6650_ab12,
            nbits: 0x1703_a30c,
        };
        upstream.on_new_job(&job);
        shared.sv1_jobs.on_job(&upstream, &job);
        upstream.on_set_new_prev_hash(&tip);
        shared.sv1_jobs.on_prev_hash(&upstream, &tip);
        let mut fx = Effects::default();
        for frame in [
            Frame::from_message(&job, &shared.pool).unwrap(),
            Frame::from_message(&tip, &shared.pool).unwrap(),
        ] {
            s.on_router(ToDownstream::Frame(frame), &mut fx);
        }
        let zeros = "00".repeat(28);
        let notify = format!(
            r#"{{"id":null,"method":"mining.notify","params":["1a","04030201{zeros}","aabb","cc",["{}"],"20000000","1703a30c","6650ab12",true]}}"#,
            "07".repeat(32)
        );
        assert_eq!(
            lines(&fx),
            [
                r#"{"id":null,"method":"mining.set_version_mask","params":["00000000"]}"#
                    .to_owned(),
                notify.clone(),
            ]
        );
        let mut fx = Effects::default();
        s.on_tick(&mut fx);
        assert!(fx.lines.is_empty());
        s.last_job_sent -= shared.config.sv1.job_refresh;
        s.on_tick(&mut fx);
        assert_eq!(lines(&fx), [notify.replace("true]", "false]")]);
    }

    /// A miner that subscribes before the pool's first job takes the upstream channel's
    /// difficulty as the pool opened it, and follows it down when the pool makes its
    /// target easier; a miner that suggested a difficulty keeps it.
    #[test]
    fn difficulty_follows_the_upstream_target() {
        use sv2c_channels::client::ClientChannel;
        let shared = Arc::new(Shared::for_tests());
        let upstream = difficulty_to_target(64.0);
        let mut channel = ClientChannel::new(vec![1, 2, 3, 4], 12, upstream);
        shared.sv1_jobs.on_target(&channel);
        let subscribe = |s: &mut Session| {
            let mut fx = Effects::default();
            s.on_message(request(1, Body::Subscribe(Subscribe::default())), &mut fx);
            let mut fx = Effects::default();
            s.on_router(opened(&s.shared.clone()), &mut fx);
            lines(&fx).pop().unwrap()
        };
        let set =
            |d: &str| format!(r#"{{"id":null,"method":"mining.set_difficulty","params":[{d}]}}"#);
        let mut plain = Session::new(1, shared.clone());
        assert_eq!(subscribe(&mut plain), set("64"));
        let mut eager = Session::new(2, shared.clone());
        let mut fx = Effects::default();
        let suggest = SuggestDifficulty { difficulty: 4096.0 };
        eager.on_message(request(5, Body::SuggestDifficulty(suggest)), &mut fx);
        assert_eq!(subscribe(&mut eager), set("4096"));
        // The pool lowers the channel's difficulty to 16: the first follows.
        let easier = SetTarget {
            channel_id: 2,
            maximum_target: difficulty_to_target(16.0),
        };
        channel.on_set_target(&easier);
        shared.sv1_jobs.on_target(&channel);
        for (s, want) in [(&mut plain, vec![set("16")]), (&mut eager, vec![])] {
            let frame = Frame::from_message(&easier, &shared.pool).unwrap();
            let mut fx = Effects::default();
            s.on_router(ToDownstream::Frame(frame), &mut fx);
            assert_eq!(lines(&fx), want);
        }
        // A harder upstream target leaves the miners where they are (vardiff moves them).
        let harder = SetTarget {
            channel_id: 2,
            maximum_target: difficulty_to_target(1024.0),
        };
        channel.on_set_target(&harder);
        shared.sv1_jobs.on_target(&channel);
        let frame = Frame::from_message(&harder, &shared.pool).unwrap();
        let mut fx = Effects::default();
        plain.on_router(ToDownstream::Frame(frame), &mut fx);
        assert!(fx.is_empty());
    }

    /// `--sv1-pow2-difficulty`: difficulties are rounded down to a power of two.
    #[test]
    fn powers_of_two() {
        let mut shared = Shared::for_tests();
        shared.config.sv1.pow2_difficulty = true;
        let mut s = Session::new(1, Arc::new(shared));
        let mut fx = Effects::default();
        s.set_difficulty(1000.0, &mut fx);
        s.set_difficulty(0.3, &mut fx);
        assert_eq!(
            lines(&fx),
            [
                r#"{"id":null,"method":"mining.set_difficulty","params":[512]}"#,
                r#"{"id":null,"method":"mining.set_difficulty","params":[0.25]}"#,
            ]
        );
    }
}
