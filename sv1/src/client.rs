//! What a miner sends: `mining.subscribe`, `mining.authorize`, `mining.configure`
//! (BIP 310), `mining.suggest_difficulty`. `mining.submit` is in [`crate::submit`],
//! `mining.extranonce.subscribe` takes no parameters
//! ([`Body::ExtranonceSubscribe`](crate::Body::ExtranonceSubscribe)).

use serde_json::{Map, Value};

use crate::error::ParamsError;
use crate::json::{self, Out};
use crate::params::{Params, uint, wrong};

/// The name of the `mining.configure` extension for version rolling (BIP 310).
pub const VERSION_ROLLING: &str = "version-rolling";
/// The name of the `mining.configure` extension for a minimum difficulty (BIP 310).
pub const MINIMUM_DIFFICULTY: &str = "minimum-difficulty";
/// The name of the `mining.configure` extension asking for `mining.set_extranonce`
/// (BIP 310).
pub const SUBSCRIBE_EXTRANONCE: &str = "subscribe-extranonce";

const MASK: &str = "version-rolling.mask";
const MIN_BIT_COUNT: &str = "version-rolling.min-bit-count";
const MIN_DIFFICULTY_VALUE: &str = "minimum-difficulty.value";

// ===== mining.subscribe =====

/// `mining.subscribe`: `[]`, `["cgminer/4.11.1"]` or `["bmminer/2.0.0", "a1b2c3d4"]`.
///
/// Parameters after the second (host and port, as some firmware sends) are accepted and
/// dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscribe {
    /// The miner's user agent, `"name/version"`.
    pub user_agent: Option<String>,
    /// The subscription (extranonce1 session) the miner asks to resume, as sent.
    pub session_id: Option<String>,
}

impl Subscribe {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        Ok(Subscribe {
            user_agent: p.opt_str(0, "user agent")?.map(str::to_owned),
            session_id: p.opt_str(1, "session id")?.map(str::to_owned),
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        match (&self.user_agent, &self.session_id) {
            (None, None) => {}
            (Some(agent), None) => {
                out.val(agent);
            }
            (agent, Some(session)) => {
                out.val(agent).raw(b",").val(session);
            }
        }
    }
}

// ===== mining.authorize =====

/// `mining.authorize`: `["worker.name", "password"]`. A missing or `null` password reads
/// as `""`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Authorize {
    /// The worker name (often `"account.worker"`).
    pub name: String,
    /// The password (often `"x"`).
    pub password: String,
}

impl Authorize {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(1, 2, "1 or 2")?;
        Ok(Authorize {
            name: p.str(0, "name")?.to_owned(),
            password: p.opt_str(1, "password")?.unwrap_or_default().to_owned(),
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.val(&self.name).raw(b",").val(&self.password);
    }
}

// ===== mining.configure =====

/// `mining.configure` (BIP 310): the extensions a miner asks for and their parameters,
/// `[["version-rolling"], {"version-rolling.mask": "1fffe000",
/// "version-rolling.min-bit-count": 2}]`.
///
/// `version-rolling.min-bit-count` is an integer (BIP 310); a string of decimal digits
/// (`"2"`) is read as the same integer. Parameters this type has no field for are kept in
/// [`other_params`](Self::other_params).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Configure {
    /// The extension names, in the order sent ([`VERSION_ROLLING`],
    /// [`MINIMUM_DIFFICULTY`], [`SUBSCRIBE_EXTRANONCE`], `"info"`, …).
    pub extensions: Vec<String>,
    /// `version-rolling.mask`: the bits the miner would like to roll.
    pub version_rolling_mask: Option<u32>,
    /// `version-rolling.min-bit-count`: how many bits it needs at least.
    pub version_rolling_min_bit_count: Option<u32>,
    /// `minimum-difficulty.value`.
    pub minimum_difficulty: Option<f64>,
    /// Every other parameter (e.g. `info.*`), as sent.
    pub other_params: Map<String, Value>,
}

impl Configure {
    /// `true` if the miner asks for `extension` (e.g. [`VERSION_ROLLING`]).
    pub fn has_extension(&self, extension: &str) -> bool {
        self.extensions.iter().any(|e| e == extension)
    }

    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(1, 2, "1 or 2")?;
        let extensions = p
            .array(0, "extensions")?
            .iter()
            .map(|e| e.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or(wrong("extensions", "an array of strings"))?;
        let mut other_params = match p.0.get(1) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(wrong("extension parameters", "an object")),
        };
        let version_rolling_mask = match other_params.remove(MASK) {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(crate::hex::parse_u32)
                    .ok_or(wrong(MASK, "1 to 8 hex digits"))?,
            ),
        };
        let version_rolling_min_bit_count = match other_params.remove(MIN_BIT_COUNT) {
            None => None,
            Some(v) => Some(
                u32::try_from(uint(&v, MIN_BIT_COUNT)?)
                    .map_err(|_| wrong(MIN_BIT_COUNT, "an integer below 2^32"))?,
            ),
        };
        let minimum_difficulty = match other_params.remove(MIN_DIFFICULTY_VALUE) {
            None => None,
            Some(v) => Some(v.as_f64().ok_or(wrong(MIN_DIFFICULTY_VALUE, "a number"))?),
        };
        Ok(Configure {
            extensions,
            version_rolling_mask,
            version_rolling_min_bit_count,
            minimum_difficulty,
            other_params,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        let mut map = Map::new();
        if let Some(mask) = self.version_rolling_mask {
            map.insert(
                MASK.into(),
                crate::hex::encode_string(&mask.to_be_bytes()).into(),
            );
        }
        if let Some(n) = self.version_rolling_min_bit_count {
            map.insert(MIN_BIT_COUNT.into(), n.into());
        }
        if let Some(d) = self.minimum_difficulty {
            map.insert(MIN_DIFFICULTY_VALUE.into(), json::number(d));
        }
        map.extend(
            self.other_params
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        out.val(&self.extensions).raw(b",").val(&map);
    }
}

// ===== mining.suggest_difficulty =====

/// `mining.suggest_difficulty`: `[4096]`. Some firmware (WhatsMiner) sends it before
/// `mining.subscribe`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SuggestDifficulty {
    /// The difficulty the miner would like.
    pub difficulty: f64,
}

impl SuggestDifficulty {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(1, 1, "1")?;
        Ok(SuggestDifficulty {
            difficulty: p.f64(0, "difficulty")?,
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        out.f64(self.difficulty);
    }
}
