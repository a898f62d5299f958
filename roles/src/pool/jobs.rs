//! What a connection sends its channels as the pool's work moves: on every timer tick
//! vardiff's new targets (`SetTarget`), on a new template a job for every channel, on a
//! new chain tip a future job and the `SetNewPrevHash` that activates it. The jobs are
//! built once per work and extranonce length ([`super::template::JobCache`]).

use futures::SinkExt;
use sv2c_binary::messages::{Message, SetNewPrevHashTdp, SetTarget};
use sv2c_codec::CodecError;

use super::connection::{Conn, Connection};
use super::state::bump;
use super::template::Broadcast;

impl<F: Conn> Connection<F> {
    /// The pool's broadcast changed: on a timer tick vardiff's new targets; on a new
    /// template a new job for every channel, or on a new chain tip future jobs and the
    /// prev-hashes that activate them.
    pub(super) async fn tick(&mut self, now: Broadcast) -> Result<(), CodecError> {
        let timer = now.ticks != self.ticks;
        self.ticks = now.ticks;
        let (new_work, new_tip) = match (&self.work, &now.work) {
            (_, None) => (false, false),
            (None, Some(_)) => (true, true),
            (Some(old), Some(new)) => (old.generation != new.generation, old.block != new.block),
        };
        if new_work {
            self.work = now.work;
        }
        let ids: Vec<u32> = self.channels.keys().copied().collect();
        let time = self.shared.now_secs();
        for channel_id in ids {
            if timer {
                self.retarget(channel_id, time).await?;
            }
            if new_work {
                let template_id = self.send_job(channel_id, new_tip).await?;
                if new_tip {
                    self.send_prev_hash(channel_id, template_id).await?;
                }
            }
        }
        SinkExt::<Message>::flush(&mut self.framed).await
    }

    /// Vardiff: a new target for the channel if its controller has one due at `now`.
    async fn retarget(&mut self, channel_id: u32, now: u64) -> Result<(), CodecError> {
        let Some(channel) = self.channels.get_mut(&channel_id) else {
            return Ok(());
        };
        let Some(target) = channel.vardiff.as_mut().and_then(|v| v.poll(now)) else {
            return Ok(());
        };
        channel.inner.set_target(target);
        let msg = SetTarget {
            channel_id,
            maximum_target: target,
        };
        self.framed.feed(msg.into()).await
    }

    /// Gives a channel the job of the current work (`future`: for its chain tip, which
    /// [`send_prev_hash`](Self::send_prev_hash) sends next) and queues it; returns its
    /// template id (`None` if there is no job).
    pub(super) async fn send_job(
        &mut self,
        channel_id: u32,
        future: bool,
    ) -> Result<Option<u64>, CodecError> {
        let (Some(channel), Some(work)) = (self.channels.get_mut(&channel_id), &self.work) else {
            return Ok(None);
        };
        let job = match self
            .shared
            .job(work, future, channel.inner.extranonce_len())
        {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!("no job for channel {channel_id}: {e}");
                return Ok(None);
            }
        };
        let template_id = job.template_id;
        let msg: Message = if channel.inner.is_standard() {
            channel.inner.standard_job_message(&job, future).into()
        } else {
            match channel.inner.extended_job_message(&job, future) {
                Ok(m) => m.into(),
                Err(e) => {
                    tracing::warn!("no job for channel {channel_id}: {e}");
                    return Ok(None);
                }
            }
        };
        if future {
            channel.inner.install_future_job(job);
        } else {
            channel.inner.install_active_job(job);
        }
        bump(&self.shared.counters.jobs_sent);
        self.framed.feed(msg).await?;
        Ok(Some(template_id))
    }

    /// Moves a channel to the current work's chain tip, activating the future job of
    /// `template_id` ([`send_job`](Self::send_job)'s; `None`: nothing to activate, the
    /// channel keeps its jobs).
    pub(super) async fn send_prev_hash(
        &mut self,
        channel_id: u32,
        template_id: Option<u64>,
    ) -> Result<(), CodecError> {
        let (Some(channel), Some(work), Some(template_id)) =
            (self.channels.get_mut(&channel_id), &self.work, template_id)
        else {
            return Ok(());
        };
        let tip = SetNewPrevHashTdp {
            template_id,
            ..work.prev_hash_msg()
        };
        let Some(msg) = channel.inner.on_set_new_prev_hash(&tip) else {
            return Ok(());
        };
        bump(&self.shared.counters.prev_hashes_sent);
        self.framed.feed(msg.into()).await
    }
}
