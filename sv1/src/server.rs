//! What a pool sends without being asked: `mining.notify`, `mining.set_difficulty`,
//! `mining.set_extranonce`, `mining.set_version_mask`, `client.reconnect`.

use crate::error::ParamsError;
use crate::hex::Extranonce;
use crate::json::Out;
use crate::params::{Params, hash, uint, wrong};

// ===== mining.notify =====

/// `mining.notify`: a job. Every hex field is kept in the byte order it is sent in (in
/// particular `prevhash` keeps SV1's order of 4-byte words).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notify {
    /// The job id.
    pub job_id: String,
    /// The previous block hash, as sent (64 hex digits).
    pub prevhash: [u8; 32],
    /// The coinbase transaction before the extranonces.
    pub coinb1: Vec<u8>,
    /// The coinbase transaction after the extranonces.
    pub coinb2: Vec<u8>,
    /// The merkle branch, from the coinbase up.
    pub merkle_branch: Vec<[u8; 32]>,
    /// The block version.
    pub version: u32,
    /// The encoded network target.
    pub nbits: u32,
    /// The block time.
    pub ntime: u32,
    /// `true`: drop every earlier job.
    pub clean_jobs: bool,
}

impl Notify {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(9, 9, "9")?;
        Ok(Notify {
            job_id: p.str(0, "job_id")?.to_owned(),
            prevhash: p.hash(1, "prevhash")?,
            coinb1: p.bytes(2, "coinb1")?,
            coinb2: p.bytes(3, "coinb2")?,
            merkle_branch: p
                .array(4, "merkle_branch")?
                .iter()
                .map(|node| hash(Some(node), "merkle_branch"))
                .collect::<Result<_, _>>()?,
            version: p.word(5, "version")?,
            nbits: p.word(6, "nbits")?,
            ntime: p.word(7, "ntime")?,
            clean_jobs: p.bool(8, "clean_jobs")?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.val(&self.job_id)
            .raw(b",")
            .hex(&self.prevhash)
            .raw(b",");
        out.hex(&self.coinb1).raw(b",").hex(&self.coinb2).raw(b",[");
        for (i, node) in self.merkle_branch.iter().enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            out.hex(node);
        }
        out.raw(b"],").word(self.version).raw(b",").word(self.nbits);
        out.raw(b",").word(self.ntime).raw(b",");
        out.raw(if self.clean_jobs { b"true" } else { b"false" });
    }
}

// ===== mining.set_difficulty =====

/// `mining.set_difficulty`: `[1024]` or `[0.5]`: the share difficulty from the next job on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SetDifficulty {
    /// The difficulty (may be fractional).
    pub difficulty: f64,
}

impl SetDifficulty {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(1, 1, "1")?;
        Ok(SetDifficulty {
            difficulty: p.f64(0, "difficulty")?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.f64(self.difficulty);
    }
}

// ===== mining.set_extranonce =====

/// `mining.set_extranonce`: `["08000002", 4]`: a new extranonce1 and extranonce2 size,
/// from the next job on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetExtranonce {
    /// The new extranonce1.
    pub extranonce1: Extranonce,
    /// The size of extranonce2 in bytes.
    pub extranonce2_size: usize,
}

impl SetExtranonce {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(2, 2, "2")?;
        Ok(SetExtranonce {
            extranonce1: p.extranonce(0, "extranonce1")?,
            extranonce2_size: usize::try_from(p.u64(1, "extranonce2_size")?)
                .map_err(|_| wrong("extranonce2_size", "a size"))?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.hex(self.extranonce1.as_bytes()).raw(b",");
        out.u64(self.extranonce2_size as u64); // usize fits in u64
    }
}

// ===== mining.set_version_mask =====

/// `mining.set_version_mask`: `["1fffe000"]`: the version bits the miner may roll now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetVersionMask {
    /// The mask.
    pub mask: u32,
}

impl SetVersionMask {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(1, 1, "1")?;
        Ok(SetVersionMask {
            mask: p.word(0, "mask")?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.word(self.mask);
    }
}

// ===== client.reconnect =====

/// `client.reconnect`: `[]`, `["pool.example", 3333]` or `["pool.example", 3333, 5]`:
/// connect again (to this host and port, after this many seconds). A port sent as a
/// string of digits (`"3333"`) is read as the number.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reconnect {
    /// The host to connect to (`None`: the same).
    pub host: Option<String>,
    /// The port (`None`: the same).
    pub port: Option<u16>,
    /// Seconds to wait first.
    pub wait_secs: Option<u64>,
}

impl Reconnect {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(0, 3, "0 to 3")?;
        let port = match p.0.get(1).filter(|v| !v.is_null()) {
            None => None,
            Some(v) => {
                Some(u16::try_from(uint(v, "port")?).map_err(|_| wrong("port", "a port number"))?)
            }
        };
        Ok(Reconnect {
            host: p.opt_str(0, "host")?.map(str::to_owned),
            port,
            wait_secs: p.opt_u64(2, "wait")?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        let n = if self.wait_secs.is_some() {
            3
        } else if self.port.is_some() {
            2
        } else {
            usize::from(self.host.is_some())
        };
        if n >= 1 {
            out.val(&self.host);
        }
        if n >= 2 {
            out.raw(b",").val(&self.port);
        }
        if n >= 3 {
            out.raw(b",").val(&self.wait_secs);
        }
    }
}
