//! The malformed-input matrix: for every message of the catalog, inputs built to hit each
//! failure class, generated from the golden vectors (`tests-data/sv2-vectors.jsonl`).
//!
//! Each message's field layout is written down once below, from the spec's field tables
//! (SV2-WIRE §3; the table of `shared/vectors/README.md`), and walked by a small model
//! decoder written from the spec's type rules (§1.1, §1.2), independently of the crate.
//! From a valid payload the matrix derives:
//!
//! | family | input | expected |
//! |---|---|---|
//! | truncation | the payload cut at every byte (payloads ≤ 4 KiB; larger ones around every field boundary and at 64 spread points) | `Truncated` inside the message, success inside a TLV tail |
//! | prefix-past-end | a length prefix (STR0_255, B0_*) set larger than the bytes left | `Truncated` at the prefix |
//! | seq-count-past-end | a SEQ count whose elements cannot fit in the bytes left | `Truncated` |
//! | b032-too-long | a B0_32 prefix of 33..=255 | `TooLong { len, max: 32 }` |
//! | option-count | an OPTION count of 2..=255 | `InvalidOptionCount` |
//! | protocol-value | `SetupConnection.protocol` 3..=255 | `InvalidValue` |
//! | mutation | the payload with 1–3 random bytes replaced | whatever the model says |
//! | garbage | random bytes of random length | whatever the model says |
//! | channel-bit | the payload under the other value of the channel bit | same as without |
//! | unknown-message | every `(extension_type, msg_type)` the catalog lacks, in every set | `UnknownMessage`; `decode_or_raw` keeps the bytes |
//! | wrong-protocol-set | a known message decoded by another protocol's set | `UnknownMessage` |
//! | frame | frame headers cut short, a 16 MiB `msg_length` with a 6-byte body, lengths past the end, trailing bytes | `Truncated` / `TrailingBytes` |
//!
//! For every message case, the decoder (owned **and** borrowed, through the all-messages
//! set and the protocol's own set) must give exactly what the model predicts: the same
//! error kind, offset, wire type and field, or the same value, which re-encodes to the
//! consumed bytes (with BOOL normalised to 0/1). A tracking global allocator checks that a
//! borrowed decode allocates nothing, a failing decode nothing, and a successful owned
//! decode at most the input length plus 256 bytes.

#[path = "fuzz_checks/alloc.rs"]
#[allow(dead_code, unreachable_pub)]
mod alloc;

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloc::peak_during;
use sv2c_binary::messages::{
    CATALOG, CommonMessage, CommonMessageRef, ExtensionsMessage, ExtensionsMessageRef,
    JobDeclarationMessage, JobDeclarationMessageRef, Message, MessageOrRaw, MessageProtocol,
    MessageRef, MiningMessage, MiningMessageRef, TemplateDistributionMessage,
    TemplateDistributionMessageRef, frame_parts, lookup, split_frame,
};
use sv2c_binary::{CHANNEL_BIT, DecodeErrorKind, DispatchError, Encode, MessageSet};

#[global_allocator]
static GLOBAL: alloc::Tracking = alloc::Tracking;

/// Allowed on top of the input length for a successful owned decode.
const SLACK: usize = 256;

// ===== the layout table (spec §3) =====

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    U8,
    U16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elem {
    U16,
    U32,
    U256,
    B016M,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// `SetupConnection.protocol`: a U8 of 0, 1 or 2.
    Protocol,
    Bool,
    U16,
    U32,
    U64,
    F32,
    U256,
    Str0255,
    B032,
    B0255,
    B064K,
    B016M,
    OptU32,
    Seq(Count, Elem),
}

use Ty::{
    B016M, B032, B064K, B0255, Bool, F32, OptU32, Protocol, Seq, Str0255, U16, U32, U64, U256,
};

struct Layout {
    ext: u16,
    msg_type: u8,
    name: &'static str,
    fields: &'static [(&'static str, Ty)],
}

macro_rules! layouts {
    ($( $ext:literal $mt:literal $name:ident { $( $f:ident: $t:expr ),* $(,)? } )*) => {
        &[ $( Layout { ext: $ext, msg_type: $mt, name: stringify!($name), fields: &[ $( (stringify!($f), $t) ),* ] }, )* ]
    };
}

const SEQ255_U256: Ty = Seq(Count::U8, Elem::U256);
const SEQ64K_U256: Ty = Seq(Count::U16, Elem::U256);
const SEQ64K_U16: Ty = Seq(Count::U16, Elem::U16);
const SEQ64K_U32: Ty = Seq(Count::U16, Elem::U32);
const SEQ64K_B016M: Ty = Seq(Count::U16, Elem::B016M);

/// Every message's fields in wire order, as the spec's tables give them.
const LAYOUTS: &[Layout] = layouts! {
    0 0x00 SetupConnection { protocol: Protocol, min_version: U16, max_version: U16, flags: U32,
        endpoint_host: Str0255, endpoint_port: U16, vendor: Str0255, hardware_version: Str0255,
        firmware: Str0255, device_id: Str0255 }
    0 0x01 SetupConnectionSuccess { used_version: U16, flags: U32 }
    0 0x02 SetupConnectionError { flags: U32, error_code: Str0255 }
    0 0x03 ChannelEndpointChanged { channel_id: U32 }
    0 0x04 Reconnect { new_host: Str0255, new_port: U16 }
    0 0x10 OpenStandardMiningChannel { request_id: U32, user_identity: Str0255,
        nominal_hash_rate: F32, max_target: U256 }
    0 0x11 OpenStandardMiningChannelSuccess { request_id: U32, channel_id: U32, target: U256,
        extranonce_prefix: B032, group_channel_id: U32 }
    0 0x12 OpenMiningChannelError { request_id: U32, error_code: Str0255 }
    0 0x13 OpenExtendedMiningChannel { request_id: U32, user_identity: Str0255,
        nominal_hash_rate: F32, max_target: U256, min_extranonce_size: U16 }
    0 0x14 OpenExtendedMiningChannelSuccess { request_id: U32, channel_id: U32, target: U256,
        extranonce_size: U16, extranonce_prefix: B032, group_channel_id: U32 }
    0 0x15 NewMiningJob { channel_id: U32, job_id: U32, min_ntime: OptU32, version: U32,
        merkle_root: U256 }
    0 0x16 UpdateChannel { channel_id: U32, nominal_hash_rate: F32, maximum_target: U256 }
    0 0x17 UpdateChannelError { channel_id: U32, error_code: Str0255 }
    0 0x18 CloseChannel { channel_id: U32, reason_code: Str0255 }
    0 0x19 SetExtranoncePrefix { channel_id: U32, extranonce_prefix: B032 }
    0 0x1a SubmitSharesStandard { channel_id: U32, sequence_number: U32, job_id: U32, nonce: U32,
        ntime: U32, version: U32 }
    0 0x1b SubmitSharesExtended { channel_id: U32, sequence_number: U32, job_id: U32, nonce: U32,
        ntime: U32, version: U32, extranonce: B032 }
    0 0x1c SubmitSharesSuccess { channel_id: U32, last_sequence_number: U32,
        new_submits_accepted_count: U32, new_shares_sum: U64 }
    0 0x1d SubmitSharesError { channel_id: U32, sequence_number: U32, error_code: Str0255 }
    0 0x1f NewExtendedMiningJob { channel_id: U32, job_id: U32, min_ntime: OptU32, version: U32,
        version_rolling_allowed: Bool, merkle_path: SEQ255_U256, coinbase_tx_prefix: B064K,
        coinbase_tx_suffix: B064K }
    0 0x20 SetNewPrevHash { channel_id: U32, job_id: U32, prev_hash: U256, min_ntime: U32,
        nbits: U32 }
    0 0x21 SetTarget { channel_id: U32, maximum_target: U256 }
    0 0x22 SetCustomMiningJob { channel_id: U32, request_id: U32, token: B0255, version: U32,
        prev_hash: U256, min_ntime: U32, nbits: U32, coinbase_tx_version: U32,
        coinbase_prefix: B0255, coinbase_tx_input_n_sequence: U32, coinbase_tx_outputs: B064K,
        coinbase_tx_locktime: U32, merkle_path: SEQ255_U256 }
    0 0x23 SetCustomMiningJobSuccess { channel_id: U32, request_id: U32, job_id: U32 }
    0 0x24 SetCustomMiningJobError { channel_id: U32, request_id: U32, error_code: Str0255 }
    0 0x25 SetGroupChannel { group_channel_id: U32, channel_ids: SEQ64K_U32 }
    0 0x50 AllocateMiningJobToken { user_identifier: Str0255, request_id: U32 }
    0 0x51 AllocateMiningJobTokenSuccess { request_id: U32, mining_job_token: B0255,
        coinbase_outputs: B064K }
    0 0x55 ProvideMissingTransactions { request_id: U32, unknown_tx_position_list: SEQ64K_U16 }
    0 0x56 ProvideMissingTransactionsSuccess { request_id: U32, transaction_list: SEQ64K_B016M }
    0 0x57 DeclareMiningJob { request_id: U32, mining_job_token: B0255, version: U32,
        coinbase_tx_prefix: B064K, coinbase_tx_suffix: B064K, wtxid_list: SEQ64K_U256,
        excess_data: B064K }
    0 0x58 DeclareMiningJobSuccess { request_id: U32, new_mining_job_token: B0255 }
    0 0x59 DeclareMiningJobError { request_id: U32, error_code: Str0255, error_details: B064K }
    0 0x60 PushSolution { extranonce: B032, prev_hash: U256, nonce: U32, ntime: U32, nbits: U32,
        version: U32 }
    0 0x70 CoinbaseOutputConstraints { coinbase_output_max_additional_size: U32,
        coinbase_output_max_additional_sigops: U16 }
    0 0x71 NewTemplate { template_id: U64, future_template: Bool, version: U32,
        coinbase_tx_version: U32, coinbase_prefix: B0255, coinbase_tx_input_sequence: U32,
        coinbase_tx_value_remaining: U64, coinbase_tx_outputs_count: U32,
        coinbase_tx_outputs: B064K, coinbase_tx_locktime: U32, merkle_path: SEQ255_U256 }
    0 0x72 SetNewPrevHash { template_id: U64, prev_hash: U256, header_timestamp: U32,
        n_bits: U32, target: U256 }
    0 0x73 RequestTransactionData { template_id: U64 }
    0 0x74 RequestTransactionDataSuccess { template_id: U64, excess_data: B064K,
        transaction_list: SEQ64K_B016M }
    0 0x75 RequestTransactionDataError { template_id: U64, error_code: Str0255 }
    0 0x76 SubmitSolution { template_id: U64, version: U32, header_timestamp: U32,
        header_nonce: U32, coinbase_tx: B064K }
    1 0x00 RequestExtensions { request_id: U16, requested_extensions: SEQ64K_U16 }
    1 0x01 RequestExtensionsSuccess { request_id: U16, supported_extensions: SEQ64K_U16 }
    1 0x02 RequestExtensionsError { request_id: U16, unsupported_extensions: SEQ64K_U16,
        required_extensions: SEQ64K_U16 }
};

fn layout_of(ext: u16, msg_type: u8) -> &'static Layout {
    LAYOUTS
        .iter()
        .find(|l| l.ext == ext & !CHANNEL_BIT && l.msg_type == msg_type)
        .unwrap_or_else(|| panic!("no layout for {ext:#06x}/{msg_type:#04x}"))
}

// ===== the model decoder (spec §1.1, §1.2) =====

/// What the model expects a decode to fail with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expect {
    kind: DecodeErrorKind,
    offset: usize,
    ty: &'static str,
    field: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtomKind {
    /// A fixed-size value.
    Fixed,
    /// A BOOL byte (re-encoded as bit 0 only).
    Bool,
    /// A length-prefixed byte string.
    Prefixed { prefix: usize, max: usize },
    /// An OPTION count byte.
    OptCount,
    /// A sequence's count prefix; `fixed` if the elements are fixed-size (then the atom
    /// covers the elements too).
    SeqCount {
        prefix: usize,
        max: usize,
        elem_min: usize,
        fixed: bool,
    },
}

/// The smallest unit whose truncation a decoder reports at its own start.
#[derive(Debug, Clone, Copy)]
struct Atom {
    start: usize,
    end: usize,
    kind: AtomKind,
    ty: &'static str,
}

struct Model<'a> {
    bytes: &'a [u8],
    pos: usize,
    field: &'static str,
    atoms: Vec<Atom>,
}

impl Model<'_> {
    fn rem_from(&self, at: usize) -> usize {
        self.bytes.len() - at
    }

    fn fail(&self, kind: DecodeErrorKind, offset: usize, ty: &'static str) -> Expect {
        Expect {
            kind,
            offset,
            ty,
            field: self.field,
        }
    }

    fn need(&self, n: usize, ty: &'static str) -> Result<(), Expect> {
        let available = self.rem_from(self.pos);
        if available < n {
            Err(self.fail(
                DecodeErrorKind::Truncated {
                    needed: n,
                    available,
                },
                self.pos,
                ty,
            ))
        } else {
            Ok(())
        }
    }

    fn le(&self, at: usize, n: usize) -> usize {
        self.bytes[at..at + n]
            .iter()
            .rev()
            .fold(0, |acc, &b| acc << 8 | usize::from(b))
    }

    fn atom(&mut self, len: usize, kind: AtomKind, ty: &'static str) {
        self.atoms.push(Atom {
            start: self.pos,
            end: self.pos + len,
            kind,
            ty,
        });
        self.pos += len;
    }

    fn fixed(&mut self, n: usize, ty: &'static str) -> Result<(), Expect> {
        self.need(n, ty)?;
        self.atom(n, AtomKind::Fixed, ty);
        Ok(())
    }

    fn prefixed(&mut self, prefix: usize, max: usize, ty: &'static str) -> Result<(), Expect> {
        let start = self.pos;
        self.need(prefix, ty)?;
        let len = self.le(start, prefix);
        if len > max {
            return Err(self.fail(DecodeErrorKind::TooLong { len, max }, start, ty));
        }
        let available = self.rem_from(start);
        if available < prefix + len {
            return Err(self.fail(
                DecodeErrorKind::Truncated {
                    needed: prefix + len,
                    available,
                },
                start,
                ty,
            ));
        }
        self.atom(prefix + len, AtomKind::Prefixed { prefix, max }, ty);
        Ok(())
    }

    fn value(&mut self, ty: Ty) -> Result<(), Expect> {
        match ty {
            Protocol => {
                self.need(1, "PROTOCOL")?;
                let v = self.bytes[self.pos];
                if v > 2 {
                    let e = DecodeErrorKind::InvalidValue { value: v.into() };
                    return Err(self.fail(e, self.pos, "PROTOCOL"));
                }
                self.atom(1, AtomKind::Fixed, "PROTOCOL");
                Ok(())
            }
            Bool => {
                self.need(1, "BOOL")?;
                self.atom(1, AtomKind::Bool, "BOOL");
                Ok(())
            }
            U16 => self.fixed(2, "U16"),
            U32 => self.fixed(4, "U32"),
            U64 => self.fixed(8, "U64"),
            F32 => self.fixed(4, "F32"),
            U256 => self.fixed(32, "U256"),
            Str0255 => self.prefixed(1, 255, "STR0_255"),
            B032 => self.prefixed(1, 32, "B0_32"),
            B0255 => self.prefixed(1, 255, "B0_255"),
            B064K => self.prefixed(2, 65_535, "B0_64K"),
            B016M => self.prefixed(3, 16_777_215, "B0_16M"),
            OptU32 => {
                let start = self.pos;
                self.need(1, "OPTION")?;
                let count = self.bytes[start];
                match count {
                    0 | 1 => {
                        self.atom(1, AtomKind::OptCount, "OPTION");
                        if count == 1 {
                            self.fixed(4, "U32")?;
                        }
                        Ok(())
                    }
                    _ => Err(self.fail(
                        DecodeErrorKind::InvalidOptionCount { count },
                        start,
                        "OPTION",
                    )),
                }
            }
            Seq(count, elem) => {
                let (prefix, max, ty) = match count {
                    Count::U8 => (1, 255, "SEQ0_255"),
                    Count::U16 => (2, 65_535, "SEQ0_64K"),
                };
                let start = self.pos;
                self.need(prefix, ty)?;
                let n = self.le(start, prefix);
                let size = match elem {
                    Elem::U16 => Some(2),
                    Elem::U32 => Some(4),
                    Elem::U256 => Some(32),
                    Elem::B016M => None,
                };
                match size {
                    Some(size) => {
                        let (needed, available) = (prefix + n * size, self.rem_from(start));
                        if available < needed {
                            let e = DecodeErrorKind::Truncated { needed, available };
                            return Err(self.fail(e, start, ty));
                        }
                        let kind = AtomKind::SeqCount {
                            prefix,
                            max,
                            elem_min: size,
                            fixed: true,
                        };
                        self.atom(needed, kind, ty);
                    }
                    None => {
                        let kind = AtomKind::SeqCount {
                            prefix,
                            max,
                            elem_min: 3,
                            fixed: false,
                        };
                        self.atom(prefix, kind, ty);
                        for _ in 0..n {
                            self.value(B016M)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// Model decode: the bytes consumed and the atoms met, or the expected error.
fn model(layout: &Layout, bytes: &[u8]) -> Result<(usize, Vec<Atom>), Expect> {
    let mut m = Model {
        bytes,
        pos: 0,
        field: "",
        atoms: Vec::new(),
    };
    for &(field, ty) in layout.fields {
        m.field = field;
        m.value(ty)?;
    }
    Ok((m.pos, m.atoms))
}

// ===== running a case =====

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Valid,
    Truncated,
    TooLong,
    InvalidOptionCount,
    InvalidValue,
    UnknownMessage,
    TrailingBytes,
}

fn class_of(kind: DecodeErrorKind) -> Class {
    match kind {
        DecodeErrorKind::Truncated { .. } => Class::Truncated,
        DecodeErrorKind::TooLong { .. } => Class::TooLong,
        DecodeErrorKind::InvalidOptionCount { .. } => Class::InvalidOptionCount,
        DecodeErrorKind::InvalidValue { .. } => Class::InvalidValue,
        DecodeErrorKind::TrailingBytes { .. } => Class::TrailingBytes,
        other => panic!("unexpected error kind {other:?}"),
    }
}

#[derive(Default)]
struct Tally {
    by_family: BTreeMap<&'static str, usize>,
    by_class: BTreeMap<Class, usize>,
}

impl Tally {
    fn add(&mut self, family: &'static str, class: Class) {
        *self.by_family.entry(family).or_default() += 1;
        *self.by_class.entry(class).or_default() += 1;
    }

    fn total(&self) -> usize {
        self.by_family.values().sum()
    }
}

/// The same message and value (equal encodings of the same message type: a NaN `f32`
/// field is not `==` to itself).
fn same(a: &Message, b: &Message) -> bool {
    a == b || (a.info() == b.info() && a.encode_to_vec() == b.encode_to_vec())
}

/// Decodes through the protocol's own set; the result as the all-messages type.
fn decode_in_protocol(
    protocol: MessageProtocol,
    ext: u16,
    mt: u8,
    bytes: &[u8],
) -> Result<Message, DispatchError> {
    match protocol {
        MessageProtocol::Common => CommonMessage::decode_message(ext, mt, bytes).map(Into::into),
        MessageProtocol::Mining => MiningMessage::decode_message(ext, mt, bytes).map(Into::into),
        MessageProtocol::JobDeclaration => {
            JobDeclarationMessage::decode_message(ext, mt, bytes).map(Into::into)
        }
        MessageProtocol::TemplateDistribution => {
            TemplateDistributionMessage::decode_message(ext, mt, bytes).map(Into::into)
        }
        MessageProtocol::Extensions => {
            ExtensionsMessage::decode_message(ext, mt, bytes).map(Into::into)
        }
    }
}

/// Runs a borrowed decode under the allocation tracker; returns its outcome as the
/// encoding of the decoded value, and the bytes the decode itself allocated.
fn measure_ref<R: Encode>(
    decode: impl FnOnce() -> Result<R, DispatchError>,
) -> (Result<Vec<u8>, DispatchError>, usize) {
    let (r, peak) = peak_during(decode);
    (r.map(|m| m.encode_to_vec()), peak)
}

/// The borrowed decode through the protocol's own set (see [`measure_ref`]).
fn decode_ref_in_protocol(
    protocol: MessageProtocol,
    ext: u16,
    mt: u8,
    bytes: &[u8],
) -> (Result<Vec<u8>, DispatchError>, usize) {
    match protocol {
        MessageProtocol::Common => measure_ref(|| CommonMessageRef::decode(ext, mt, bytes)),
        MessageProtocol::Mining => measure_ref(|| MiningMessageRef::decode(ext, mt, bytes)),
        MessageProtocol::JobDeclaration => {
            measure_ref(|| JobDeclarationMessageRef::decode(ext, mt, bytes))
        }
        MessageProtocol::TemplateDistribution => {
            measure_ref(|| TemplateDistributionMessageRef::decode(ext, mt, bytes))
        }
        MessageProtocol::Extensions => measure_ref(|| ExtensionsMessageRef::decode(ext, mt, bytes)),
    }
}

/// Runs one message case: the decoders must do what the model predicts, and the model
/// must land in `want` (the class the case was built to hit; `None`: any).
fn run_case(
    tally: &mut Tally,
    family: &'static str,
    want: Option<Class>,
    ext: u16,
    mt: u8,
    bytes: &[u8],
) {
    let layout = layout_of(ext, mt);
    let info = lookup(ext, mt).expect("a catalog message");
    let what = || {
        format!(
            "{family}: {} {:02x?}",
            layout.name,
            &bytes[..bytes.len().min(64)]
        )
    };
    let expected = model(layout, bytes);
    let class = match &expected {
        Ok(_) => Class::Valid,
        Err(e) => class_of(e.kind),
    };
    if let Some(want) = want {
        assert_eq!(class, want, "{}: the case missed its class", what());
    }

    let (owned, owned_peak) = peak_during(|| Message::decode_message(ext, mt, bytes));
    let (borrowed, ref_peak) = peak_during(|| MessageRef::decode(ext, mt, bytes));
    let borrowed = borrowed.map(|m| m.to_owned_value());
    let in_set = decode_in_protocol(info.protocol, ext, mt, bytes);
    let (ref_in_set, set_ref_peak) = decode_ref_in_protocol(info.protocol, ext, mt, bytes);
    assert_eq!(
        (ref_peak, set_ref_peak),
        (0, 0),
        "{}: a borrowed decode allocated",
        what()
    );
    match expected {
        Err(e) => {
            let got = match owned {
                Err(DispatchError::Decode(got)) => got,
                other => panic!("{}: expected {e:?}, got {other:?}", what()),
            };
            assert_eq!(
                (got.kind(), got.offset(), got.wire_type()),
                (e.kind, e.offset, e.ty),
                "{}: {got}",
                what()
            );
            assert_eq!(
                got.field(),
                format!("{}.{}", layout.name, e.field),
                "{}",
                what()
            );
            let same_err = Err(DispatchError::Decode(got));
            assert_eq!(borrowed.map(|_| ()), same_err, "{}: borrowed", what());
            assert_eq!(in_set.map(|_| ()), same_err, "{}: protocol set", what());
            assert_eq!(
                ref_in_set.map(|_| ()),
                same_err,
                "{}: protocol set, borrowed",
                what()
            );
            assert_eq!(owned_peak, 0, "{}: a failed decode allocated", what());
        }
        Ok((consumed, atoms)) => {
            let owned = owned.unwrap_or_else(|e| panic!("{}: {e}", what()));
            assert_eq!(owned.info(), info);
            // BOOL is read from bit 0 only and written as 0/1.
            let mut normal = bytes[..consumed].to_vec();
            for a in atoms.iter().filter(|a| a.kind == AtomKind::Bool) {
                normal[a.start] &= 1;
            }
            assert_eq!(owned.encode_to_vec(), normal, "{}: re-encoding", what());
            let borrowed = borrowed.unwrap_or_else(|e| panic!("{}: borrowed: {e}", what()));
            assert!(same(&borrowed, &owned), "{}: borrowed differs", what());
            let in_set = in_set.unwrap_or_else(|e| panic!("{}: protocol set: {e}", what()));
            assert!(same(&in_set, &owned), "{}: protocol set differs", what());
            assert_eq!(ref_in_set.as_deref(), Ok(&normal[..]), "{}", what());
            assert!(
                owned_peak <= bytes.len() + SLACK,
                "{}: owned decode of {} bytes allocated {owned_peak}",
                what(),
                bytes.len()
            );
        }
    }
    tally.add(family, class);
}

// ===== generating the cases =====

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

struct Vector {
    case: String,
    ext: u16,
    msg_type: u8,
    frame: Vec<u8>,
}

impl Vector {
    fn payload(&self) -> &[u8] {
        &self.frame[6..]
    }
}

fn vectors() -> Vec<Vector> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data/sv2-vectors.jsonl");
    let text = std::fs::read_to_string(path).expect("tests-data/sv2-vectors.jsonl");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            let frame = hex::decode(v["frame_hex"].as_str().expect("frame_hex")).expect("hex");
            let (ext, msg_type, _) = frame_parts(&frame).expect("a whole frame");
            Vector {
                case: v["case"].as_str().expect("case").to_owned(),
                ext,
                msg_type,
                frame,
            }
        })
        .collect()
}

/// Writes `value` as a little-endian prefix of `len` bytes at `at`.
fn with_prefix(bytes: &[u8], at: usize, len: usize, value: usize) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v[at..at + len].copy_from_slice(&value.to_le_bytes()[..len]);
    v
}

/// Payloads up to this size are cut at every byte.
const EVERY_CUT_UP_TO: usize = 4096;

fn message_cases(tally: &mut Tally, v: &Vector, rng: &mut Rng) {
    let (ext, mt, payload) = (v.ext, v.msg_type, v.payload());
    let layout = layout_of(ext, mt);
    let (base_len, atoms) = model(layout, payload).unwrap_or_else(|e| {
        panic!(
            "{} {}: the model rejects the vector: {e:?}",
            layout.name, v.case
        )
    });
    // Whole: valid; the only vectors with bytes left over carry a TLV tail.
    run_case(tally, "valid", Some(Class::Valid), ext, mt, payload);
    assert!(
        base_len == payload.len() || v.case.starts_with("tlv-"),
        "{}",
        v.case
    );

    // Truncation.
    let cuts: Vec<usize> = if payload.len() <= EVERY_CUT_UP_TO {
        (0..payload.len()).collect()
    } else {
        let len = payload.len();
        let mut cuts: Vec<usize> = (0..32)
            .chain(len - 32..len)
            .chain((0..64).map(|i| i * len / 64))
            .collect();
        for a in &atoms {
            for c in a.start.saturating_sub(2)..a.start + 6 {
                cuts.push(c);
            }
            for c in a.end.saturating_sub(6)..a.end + 2 {
                cuts.push(c);
            }
        }
        cuts.retain(|&c| c < len);
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    };
    for cut in cuts {
        let want = if cut < base_len {
            Class::Truncated
        } else {
            Class::Valid
        };
        run_case(tally, "truncation", Some(want), ext, mt, &payload[..cut]);
    }

    for a in &atoms {
        match a.kind {
            AtomKind::Prefixed { prefix, max } => {
                // A length larger than the bytes left after the prefix.
                let left = payload.len() - a.start - prefix;
                for len in [left + 1, max] {
                    if len > left && len <= max {
                        let bytes = with_prefix(payload, a.start, prefix, len);
                        run_case(
                            tally,
                            "prefix-past-end",
                            Some(Class::Truncated),
                            ext,
                            mt,
                            &bytes,
                        );
                    }
                }
                if a.ty == "B0_32" {
                    for len in 33..=255 {
                        let bytes = with_prefix(payload, a.start, 1, len);
                        run_case(
                            tally,
                            "b032-too-long",
                            Some(Class::TooLong),
                            ext,
                            mt,
                            &bytes,
                        );
                    }
                }
            }
            AtomKind::SeqCount {
                prefix,
                max,
                elem_min,
                ..
            } => {
                // More elements than the bytes left could hold.
                let left = payload.len() - a.start - prefix;
                for count in [left / elem_min + 1, max] {
                    if count * elem_min > left && count <= max {
                        let bytes = with_prefix(payload, a.start, prefix, count);
                        run_case(
                            tally,
                            "seq-count-past-end",
                            Some(Class::Truncated),
                            ext,
                            mt,
                            &bytes,
                        );
                    }
                }
            }
            AtomKind::OptCount => {
                for count in 2..=255 {
                    let bytes = with_prefix(payload, a.start, 1, count);
                    run_case(
                        tally,
                        "option-count",
                        Some(Class::InvalidOptionCount),
                        ext,
                        mt,
                        &bytes,
                    );
                }
            }
            AtomKind::Fixed if a.ty == "PROTOCOL" => {
                for value in 3..=255 {
                    let bytes = with_prefix(payload, a.start, 1, value);
                    run_case(
                        tally,
                        "protocol-value",
                        Some(Class::InvalidValue),
                        ext,
                        mt,
                        &bytes,
                    );
                }
            }
            AtomKind::Fixed | AtomKind::Bool => {}
        }
    }

    // The channel bit is not checked against the catalog (spec §1.2: accept).
    run_case(
        tally,
        "channel-bit",
        Some(Class::Valid),
        ext ^ CHANNEL_BIT,
        mt,
        payload,
    );

    // Random byte replacements.
    if payload.len() <= EVERY_CUT_UP_TO && !payload.is_empty() {
        for _ in 0..128 {
            let mut bytes = payload.to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next() as u8;
            }
            run_case(tally, "mutation", None, ext, mt, &bytes);
        }
    }
}

fn garbage_cases(tally: &mut Tally, rng: &mut Rng) {
    for info in CATALOG {
        let ext = info.wire_extension_type();
        for _ in 0..1024 {
            let len = rng.below(160);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            run_case(tally, "garbage", None, ext, info.msg_type, &bytes);
        }
    }
}

fn unknown_cases(tally: &mut Tally) {
    let payload = [0x5a_u8; 40];
    for base in [
        0x0000_u16, 0x0001, 0x0002, 0x0003, 0x00ff, 0x4000, 0x4001, 0x7fff,
    ] {
        for ext in [base, base | CHANNEL_BIT] {
            for mt in 0..=255u8 {
                let want = Err(DispatchError::UnknownMessage {
                    extension_id: base,
                    msg_type: mt,
                });
                let Some(info) = lookup(ext, mt) else {
                    let (owned, _) = peak_during(|| Message::decode_message(ext, mt, &payload));
                    assert_eq!(owned.map(|_| ()), want);
                    let (borrowed, peak) =
                        peak_during(|| MessageRef::decode(ext, mt, &payload).map(|_| ()));
                    assert_eq!((borrowed, peak), (want, 0));
                    for protocol in MessageProtocol::ALL {
                        assert_eq!(
                            decode_in_protocol(protocol, ext, mt, &payload).map(|_| ()),
                            want
                        );
                        let (r, peak) = decode_ref_in_protocol(protocol, ext, mt, &payload);
                        assert_eq!((r.map(|_| ()), peak), (want, 0));
                    }
                    let (raw, peak) = peak_during(|| Message::decode_or_raw(ext, mt, &payload));
                    match raw {
                        Ok(MessageOrRaw::Raw(raw)) => {
                            assert_eq!((raw.extension_type, raw.msg_type), (ext, mt));
                            assert_eq!(raw.payload.as_slice(), payload);
                        }
                        other => panic!("{ext:#06x}/{mt:#04x}: {other:?}"),
                    }
                    assert!(peak <= payload.len() + SLACK);
                    let (raw, peak) = peak_during(|| {
                        MessageRef::decode_or_raw(ext, mt, &payload)
                            .map(|r| matches!(r, MessageOrRaw::Raw(r) if r.payload == payload))
                    });
                    assert_eq!((raw, peak), (Ok(true), 0));
                    tally.add("unknown-message", Class::UnknownMessage);
                    continue;
                };
                // A known message is unknown to every other protocol's set.
                for protocol in MessageProtocol::ALL
                    .into_iter()
                    .filter(|&p| p != info.protocol)
                {
                    assert_eq!(
                        decode_in_protocol(protocol, ext, mt, &payload).map(|_| ()),
                        want
                    );
                    let (r, peak) = decode_ref_in_protocol(protocol, ext, mt, &payload);
                    assert_eq!((r.map(|_| ()), peak), (want, 0));
                    tally.add("wrong-protocol-set", Class::UnknownMessage);
                }
            }
        }
    }
}

fn frame_cases(tally: &mut Tally, vectors: &[Vector]) {
    let truncated = |needed, available, offset| {
        move |e: sv2c_binary::DecodeError| {
            assert_eq!(
                (e.kind(), e.offset()),
                (DecodeErrorKind::Truncated { needed, available }, offset)
            );
        }
    };
    // A 16 MiB msg_length with a 6-byte body.
    let hostile = [0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6];
    let (r, peak) = peak_during(|| split_frame(&hostile).map(|_| ()));
    truncated(0xff_ffff, 6, 6)(r.unwrap_err());
    assert_eq!(peak, 0);
    truncated(0xff_ffff, 6, 6)(frame_parts(&hostile).unwrap_err());
    tally.add("frame", Class::Truncated);
    for v in vectors.iter().filter(|v| v.frame.len() <= EVERY_CUT_UP_TO) {
        let f = &v.frame;
        for cut in 0..6 {
            truncated(6, cut, 0)(split_frame(&f[..cut]).map(|_| ()).unwrap_err());
            tally.add("frame", Class::Truncated);
        }
        // msg_length one more than the bytes that follow.
        let len = f.len() - 6;
        let mut longer = f.clone();
        longer[3..6].copy_from_slice(&(len as u32 + 1).to_le_bytes()[..3]);
        truncated(len + 1, len, 6)(frame_parts(&longer).unwrap_err());
        tally.add("frame", Class::Truncated);
        // A byte after the frame.
        let mut trailing = f.clone();
        trailing.push(0);
        let e = frame_parts(&trailing).unwrap_err();
        assert_eq!(
            (e.kind(), e.offset()),
            (DecodeErrorKind::TrailingBytes { len: 1 }, f.len())
        );
        let (frame, rest) = split_frame(&trailing).unwrap();
        assert_eq!((frame.payload, rest), (&f[6..], &[0u8][..]));
        tally.add("frame", Class::TrailingBytes);
    }
}

/// [`LAYOUTS`] is transcribed from the spec, not taken from the crate, so a message added
/// to the catalog needs its row there: this fails until it has one, and for a row that
/// names no message of the catalog.
#[test]
fn layouts_cover_the_catalog() {
    for info in CATALOG {
        let rows: Vec<&str> = LAYOUTS
            .iter()
            .filter(|l| (l.ext, l.msg_type) == (info.extension_type, info.msg_type))
            .map(|l| l.name)
            .collect();
        assert_eq!(
            rows,
            [info.name],
            "{}/{}: LAYOUTS in binary-sv2/tests/malformed.rs needs exactly one row \
             `{:#x} {:#04x} {} {{ <field>: <type>, ... }}`, its fields from the spec's table",
            info.protocol,
            info.name,
            info.extension_type,
            info.msg_type,
            info.name
        );
    }
    for l in LAYOUTS {
        assert!(
            lookup(l.ext, l.msg_type).is_some(),
            "LAYOUTS row {} ({:#06x}/{:#04x}) is not a message of the catalog",
            l.name,
            l.ext,
            l.msg_type
        );
    }
}

#[test]
fn malformed_matrix() {
    alloc::assert_tracking();
    let vectors = vectors();
    let mut tally = Tally::default();
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let mut seen = std::collections::BTreeSet::new();
    for v in &vectors {
        seen.insert((v.ext & !CHANNEL_BIT, v.msg_type));
        message_cases(&mut tally, v, &mut rng);
    }
    for info in CATALOG {
        assert!(
            seen.contains(&(info.extension_type, info.msg_type)),
            "{}/{} has no golden vector",
            info.protocol,
            info.name
        );
    }
    garbage_cases(&mut tally, &mut rng);
    unknown_cases(&mut tally);
    frame_cases(&mut tally, &vectors);

    let total = tally.total();
    eprintln!("malformed matrix: {total} cases");
    for (family, n) in &tally.by_family {
        eprintln!("  {family:>20}: {n}");
    }
    for (class, n) in &tally.by_class {
        eprintln!("  {:>20}: {n}", format!("{class:?}"));
    }
    // Every class the matrix is built to hit was hit.
    for class in [
        Class::Valid,
        Class::Truncated,
        Class::TooLong,
        Class::InvalidOptionCount,
        Class::InvalidValue,
        Class::UnknownMessage,
        Class::TrailingBytes,
    ] {
        assert!(
            tally.by_class.get(&class).copied().unwrap_or(0) > 0,
            "{class:?} never hit"
        );
    }
    assert!(total >= 100_000, "only {total} cases");
}
