//! Differential tests against the reference implementation's published crates
//! (`binary_sv2` 7.0.0, `parsers_sv2` 0.6.0 and the message crates).
//!
//! For every one of the 44 messages, with random field values:
//! 1. **ours → reference**: our frame decodes with `parsers_sv2::AnyMessage`, as the same
//!    message type with the same header bits, and the reference re-encodes it to identical
//!    bytes;
//! 2. **reference → ours**: the reference struct built directly from the same values is
//!    encoded by `binary_sv2::to_bytes`; we decode those bytes (owned and borrowed paths) to
//!    the original value and re-encode them identically;
//! 3. **mutated bytes**: a valid payload with a few bytes changed or cut is accepted by both
//!    decoders or by neither, and when accepted both re-encode it to the same bytes.
//!
//! A final test does the same for TLV tails (`parsers_sv2::TlvList`).

#![allow(elided_lifetimes_in_paths)]

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use parsers_sv2::IsSv2Message;
use sv2c_binary::messages::*;
use sv2c_binary::{
    B016M, B032, B064K, B0255, Encode, Frameable, MessageSet, Protocol, Seq064K, Seq0255, Str0255,
    U256,
};

/// Cases per message type and property.
const CASES: u32 = 96;

// ===== random values =====

trait Arb: Sized + Debug + 'static {
    fn arb() -> BoxedStrategy<Self>;
}

fn arb<T: Arb>() -> BoxedStrategy<T> {
    T::arb()
}

macro_rules! arb_any {
    ($($t:ty),*) => { $( impl Arb for $t { fn arb() -> BoxedStrategy<Self> { any::<$t>().boxed() } } )* };
}
arb_any!(u8, u16, u32, u64, bool);

impl Arb for f32 {
    fn arb() -> BoxedStrategy<Self> {
        // Any bit pattern, NaNs and infinities included (SV2-WIRE §1.2: all accepted).
        any::<u32>().prop_map(f32::from_bits).boxed()
    }
}

impl Arb for U256 {
    fn arb() -> BoxedStrategy<Self> {
        any::<[u8; 32]>().prop_map(U256).boxed()
    }
}

impl Arb for Option<u32> {
    fn arb() -> BoxedStrategy<Self> {
        proptest::option::of(any::<u32>()).boxed()
    }
}

impl Arb for Protocol {
    fn arb() -> BoxedStrategy<Self> {
        prop_oneof![
            Just(Protocol::Mining),
            Just(Protocol::JobDeclaration),
            Just(Protocol::TemplateDistribution)
        ]
        .boxed()
    }
}

impl Arb for B032 {
    fn arb() -> BoxedStrategy<Self> {
        vec(any::<u8>(), 0..=32)
            .prop_map(|v| B032::try_from(v).unwrap())
            .boxed()
    }
}

impl Arb for Str0255 {
    fn arb() -> BoxedStrategy<Self> {
        // Text (multi-byte characters included) or arbitrary bytes: the type carries both.
        let text = any::<String>().prop_map(|mut s| {
            while s.len() > 255 {
                s.pop();
            }
            s.into_bytes()
        });
        prop_oneof![text, vec(any::<u8>(), 0..=255)]
            .prop_map(|v| Str0255::try_from(v).unwrap())
            .boxed()
    }
}

macro_rules! arb_blob {
    ($t:ty, $max:expr) => {
        impl Arb for $t {
            fn arb() -> BoxedStrategy<Self> {
                vec(any::<u8>(), 0..=$max)
                    .prop_map(|v| <$t>::try_from(v).unwrap())
                    .boxed()
            }
        }
    };
}
arb_blob!(B0255, 255);
arb_blob!(B064K, 300);
arb_blob!(B016M, 300);

impl<T: Arb + sv2c_binary::Wire> Arb for Seq0255<T> {
    fn arb() -> BoxedStrategy<Self> {
        vec(arb::<T>(), 0..=64)
            .prop_map(|v| Seq0255::from_slice(&v).unwrap())
            .boxed()
    }
}

impl<T: Arb + sv2c_binary::Wire> Arb for Seq064K<T> {
    fn arb() -> BoxedStrategy<Self> {
        vec(arb::<T>(), 0..=64)
            .prop_map(|v| Seq064K::from_slice(&v).unwrap())
            .boxed()
    }
}

/// `(arb(), (arb(), (… , Just(()))))`: one strategy per field, nested in pairs so that any
/// number of fields fits.
macro_rules! nest {
    () => { Just(()) };
    ($f:ident $(, $rest:ident)*) => { (arb(), nest!($($rest),*)) };
}

/// The pattern matching [`nest!`].
macro_rules! nest_pat {
    () => { () };
    ($f:ident $(, $rest:ident)*) => { ($f, nest_pat!($($rest),*)) };
}

// ===== the reference's types, from ours =====

/// Builds the reference implementation's value from ours (borrowing our bytes).
trait ToSri<'a> {
    type Out;
    fn to_sri(&'a self) -> Self::Out;
}

macro_rules! sri_copy {
    ($($t:ty),*) => { $( impl<'a> ToSri<'a> for $t { type Out = $t; fn to_sri(&'a self) -> $t { *self } } )* };
}
sri_copy!(u8, u16, u32, u64, bool, f32);

impl<'a> ToSri<'a> for U256 {
    type Out = binary_sv2::U256<'a>;
    fn to_sri(&'a self) -> Self::Out {
        (&self.0).into()
    }
}

impl<'a> ToSri<'a> for Option<u32> {
    type Out = binary_sv2::Sv2Option<'a, u32>;
    fn to_sri(&'a self) -> Self::Out {
        binary_sv2::Sv2Option::new(*self)
    }
}

impl<'a> ToSri<'a> for Protocol {
    type Out = common_messages_sv2::Protocol;
    fn to_sri(&'a self) -> Self::Out {
        match self {
            Protocol::Mining => common_messages_sv2::Protocol::MiningProtocol,
            Protocol::JobDeclaration => common_messages_sv2::Protocol::JobDeclarationProtocol,
            Protocol::TemplateDistribution => {
                common_messages_sv2::Protocol::TemplateDistributionProtocol
            }
        }
    }
}

macro_rules! sri_bytes {
    ($($ours:ty => $theirs:ident, $get:ident;)*) => { $(
        impl<'a> ToSri<'a> for $ours {
            type Out = binary_sv2::$theirs<'a>;
            fn to_sri(&'a self) -> Self::Out {
                binary_sv2::$theirs::try_from(self.$get()).unwrap()
            }
        }
    )* };
}
sri_bytes! {
    B032 => B032, as_slice;
    Str0255 => Str0255, as_bytes;
    B0255 => B0255, as_bytes;
    B064K => B064K, as_bytes;
    B016M => B016M, as_bytes;
}

impl<'a> ToSri<'a> for Seq0255<U256> {
    type Out = binary_sv2::Seq0255<'a, binary_sv2::U256<'a>>;
    fn to_sri(&'a self) -> Self::Out {
        binary_sv2::Seq0255::new(self.as_arrays().iter().map(Into::into).collect()).unwrap()
    }
}

impl<'a> ToSri<'a> for Seq064K<U256> {
    type Out = binary_sv2::Seq064K<'a, binary_sv2::U256<'a>>;
    fn to_sri(&'a self) -> Self::Out {
        binary_sv2::Seq064K::new(self.as_arrays().iter().map(Into::into).collect()).unwrap()
    }
}

impl<'a> ToSri<'a> for Seq064K<u16> {
    type Out = binary_sv2::Seq064K<'a, u16>;
    fn to_sri(&'a self) -> Self::Out {
        binary_sv2::Seq064K::new(self.to_vec()).unwrap()
    }
}

impl<'a> ToSri<'a> for Seq064K<u32> {
    type Out = binary_sv2::Seq064K<'a, u32>;
    fn to_sri(&'a self) -> Self::Out {
        binary_sv2::Seq064K::new(self.to_vec()).unwrap()
    }
}

impl<'a> ToSri<'a> for Seq064K<B016M> {
    type Out = binary_sv2::Seq064K<'a, binary_sv2::B016M<'a>>;
    fn to_sri(&'a self) -> Self::Out {
        let items = self
            .iter_ref()
            .map(|t| binary_sv2::B016M::try_from(t.as_bytes()).unwrap())
            .collect();
        binary_sv2::Seq064K::new(items).unwrap()
    }
}

// ===== the checks =====

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// The reference decoder on a frame payload: its re-encoding, or `None` if it rejects it.
fn reference_reencode(ext: u16, msg_type: u8, payload: &[u8]) -> Option<Vec<u8>> {
    let mut header = Vec::with_capacity(6);
    header.extend_from_slice(&ext.to_le_bytes());
    header.push(msg_type);
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    let header = framing_sv2::header::Header::from_bytes(&header).ok()?;
    let mut payload = payload.to_vec();
    let any = parsers_sv2::AnyMessage::try_from((header, payload.as_mut_slice())).ok()?;
    Some(binary_sv2::to_bytes(any).expect("the reference re-encodes what it decoded"))
}

/// Properties 1 and 2 for one value: `sri` is the reference struct built from the same
/// field values.
fn check_both_ways<M, S>(m: &M, sri: S) -> Result<(), TestCaseError>
where
    M: Frameable + Clone + Debug + Into<Message>,
    S: binary_sv2::Serialize + binary_sv2::GetSize,
{
    let (ext, msg_type) = (m.wire_extension_type(), m.msg_type());
    let ours = m.encode_to_vec();

    // 1. ours → reference → reference's bytes.
    let frame = encode_frame(m).map_err(|e| fail(e.to_string()))?;
    let header = framing_sv2::header::Header::from_bytes(&frame[..6]).unwrap();
    let mut payload = frame[6..].to_vec();
    let any = parsers_sv2::AnyMessage::try_from((header, payload.as_mut_slice()))
        .map_err(|e| fail(format!("reference rejects our {m:?}: {e:?}")))?;
    prop_assert_eq!(any.message_type(), msg_type);
    prop_assert_eq!(any.extension_type(), ext & 0x7fff);
    prop_assert_eq!(any.channel_bit(), ext & 0x8000 != 0, "channel bit");
    let theirs = binary_sv2::to_bytes(any).map_err(|e| fail(format!("{e:?}")))?;
    prop_assert_eq!(&theirs, &ours, "reference re-encoding of our bytes");

    // 2. reference value → reference's bytes → ours.
    let sri_bytes = binary_sv2::to_bytes(sri).map_err(|e| fail(format!("{e:?}")))?;
    prop_assert_eq!(&sri_bytes, &ours, "reference encoding of the same values");
    let decoded = Message::decode_message(ext, msg_type, &sri_bytes)
        .map_err(|e| fail(format!("we reject the reference's bytes: {e}")))?;
    let borrowed = MessageRef::decode(ext, msg_type, &sri_bytes)
        .map_err(|e| fail(format!("we reject the reference's bytes (Ref): {e}")))?;
    prop_assert_eq!(&decoded.encode_to_vec(), &sri_bytes);
    prop_assert_eq!(&borrowed.encode_to_vec(), &sri_bytes);
    // Debug compares NaN fields too (by their printed form; the bytes were compared above).
    let expected: Message = m.clone().into();
    prop_assert_eq!(format!("{decoded:?}"), format!("{expected:?}"));
    prop_assert_eq!(
        format!("{:?}", borrowed.to_owned_value()),
        format!("{expected:?}")
    );
    Ok(())
}

/// Property 3: both decoders accept or reject a mutated payload alike, and agree on it.
fn check_mutated(ext: u16, msg_type: u8, payload: &[u8]) -> Result<(), TestCaseError> {
    let theirs = reference_reencode(ext, msg_type, payload);
    let ours = Message::decode_message(ext, msg_type, payload);
    let ours_ref = MessageRef::decode(ext, msg_type, payload);
    match (&ours, &theirs) {
        (Ok(m), Some(t)) => {
            prop_assert_eq!(&m.encode_to_vec(), t, "both accept, re-encodings differ");
            prop_assert_eq!(&ours_ref.map(|r| r.encode_to_vec()).ok(), &Some(t.clone()));
        }
        (Err(_), None) => prop_assert!(ours_ref.is_err()),
        (Ok(m), None) => return Err(fail(format!("we accept what the reference rejects: {m:?}"))),
        (Err(e), Some(_)) => {
            return Err(fail(format!("we reject what the reference accepts: {e}")));
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(prop::sample::Index, u8),
    Cut(prop::sample::Index),
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    let one = prop_oneof![
        3 => (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Cut),
    ];
    vec(one, 1..=3)
}

fn mutate(mut bytes: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if bytes.is_empty() {
            break;
        }
        match m {
            Mutation::Set(i, b) => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Mutation::Cut(i) => {
                let at = i.index(bytes.len());
                bytes.truncate(at);
            }
        }
    }
    bytes
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// One test per message: random values (`nest!`), the reference struct built field by
/// field (`ToSri`), then the three properties. Also [`ROWS`], the messages the table covers
/// (checked against the catalog by `the_table_covers_the_catalog`).
macro_rules! differential {
    ($( $test:ident: $T:ident => $($sri:ident)::+ { $($f:ident),* $(,)? } )*) => {
    /// `(test, name, extension_type, msg_type)` of each row of the table.
    const ROWS: &[(&str, &str, u16, u8)] = &[ $( (
        stringify!($test),
        <$T as sv2c_binary::MessageType>::NAME,
        <$T as sv2c_binary::MessageType>::EXTENSION_TYPE,
        <$T as sv2c_binary::MessageType>::MSG_TYPE,
    ), )* ];
    $(
        #[test]
        fn $test() {
            let strategy = nest!($($f),*).prop_map(|nest_pat!($($f),*)| $T { $($f),* });
            runner()
                .run(&strategy, |m: $T| {
                    check_both_ways(&m, $($sri)::+ { $( $f: ToSri::to_sri(&m.$f), )* })
                })
                .unwrap();
            runner()
                .run(&(strategy, mutations()), |(m, muts): ($T, Vec<Mutation>)| {
                    let payload = mutate(m.encode_to_vec(), &muts);
                    check_mutated(m.wire_extension_type(), m.msg_type(), &payload)
                })
                .unwrap();
        }
    )* };
}

/// The table is written by hand (each message beside its SRI type, field by field), so a
/// message added to the catalog needs a row here: this fails until it has one, and for a
/// row that names no message of the catalog.
#[test]
fn the_table_covers_the_catalog() {
    for m in CATALOG {
        let rows: Vec<&str> = ROWS
            .iter()
            .filter(|r| (r.2, r.3) == (m.extension_type, m.msg_type))
            .map(|r| r.0)
            .collect();
        assert!(
            rows.len() == 1,
            "{}/{} ({:#06x}/{:#04x}) has {} rows {rows:?} in the `differential!` table of \
             binary-sv2/tests/differential.rs; it needs exactly one: \
             `<test>: <our type> => <SRI crate>::<SRI type> {{ <fields> }}`",
            m.protocol,
            m.name,
            m.extension_type,
            m.msg_type,
            rows.len()
        );
    }
    for (test, name, ext, msg_type) in ROWS {
        assert_eq!(
            lookup(*ext, *msg_type).map(|m| m.name),
            Some(*name),
            "row `{test}` of the `differential!` table is not a message of the catalog"
        );
    }
}

differential! {
    setup_connection: SetupConnection => common_messages_sv2::SetupConnection {
        protocol, min_version, max_version, flags, endpoint_host, endpoint_port, vendor,
        hardware_version, firmware, device_id,
    }
    setup_connection_success: SetupConnectionSuccess => common_messages_sv2::SetupConnectionSuccess {
        used_version, flags,
    }
    setup_connection_error: SetupConnectionError => common_messages_sv2::SetupConnectionError {
        flags, error_code,
    }
    channel_endpoint_changed: ChannelEndpointChanged => common_messages_sv2::ChannelEndpointChanged {
        channel_id,
    }
    reconnect: Reconnect => common_messages_sv2::Reconnect { new_host, new_port }

    open_standard_mining_channel: OpenStandardMiningChannel => mining_sv2::OpenStandardMiningChannel {
        request_id, user_identity, nominal_hash_rate, max_target,
    }
    open_standard_mining_channel_success: OpenStandardMiningChannelSuccess => mining_sv2::OpenStandardMiningChannelSuccess {
        request_id, channel_id, target, extranonce_prefix, group_channel_id,
    }
    open_mining_channel_error: OpenMiningChannelError => mining_sv2::OpenMiningChannelError {
        request_id, error_code,
    }
    open_extended_mining_channel: OpenExtendedMiningChannel => mining_sv2::OpenExtendedMiningChannel {
        request_id, user_identity, nominal_hash_rate, max_target, min_extranonce_size,
    }
    open_extended_mining_channel_success: OpenExtendedMiningChannelSuccess => mining_sv2::OpenExtendedMiningChannelSuccess {
        request_id, channel_id, target, extranonce_size, extranonce_prefix, group_channel_id,
    }
    new_mining_job: NewMiningJob => mining_sv2::NewMiningJob {
        channel_id, job_id, min_ntime, version, merkle_root,
    }
    update_channel: UpdateChannel => mining_sv2::UpdateChannel {
        channel_id, nominal_hash_rate, maximum_target,
    }
    update_channel_error: UpdateChannelError => mining_sv2::UpdateChannelError { channel_id, error_code }
    close_channel: CloseChannel => mining_sv2::CloseChannel { channel_id, reason_code }
    set_extranonce_prefix: SetExtranoncePrefix => mining_sv2::SetExtranoncePrefix {
        channel_id, extranonce_prefix,
    }
    submit_shares_standard: SubmitSharesStandard => mining_sv2::SubmitSharesStandard {
        channel_id, sequence_number, job_id, nonce, ntime, version,
    }
    submit_shares_extended: SubmitSharesExtended => mining_sv2::SubmitSharesExtended {
        channel_id, sequence_number, job_id, nonce, ntime, version, extranonce,
    }
    submit_shares_success: SubmitSharesSuccess => mining_sv2::SubmitSharesSuccess {
        channel_id, last_sequence_number, new_submits_accepted_count, new_shares_sum,
    }
    submit_shares_error: SubmitSharesError => mining_sv2::SubmitSharesError {
        channel_id, sequence_number, error_code,
    }
    new_extended_mining_job: NewExtendedMiningJob => mining_sv2::NewExtendedMiningJob {
        channel_id, job_id, min_ntime, version, version_rolling_allowed, merkle_path,
        coinbase_tx_prefix, coinbase_tx_suffix,
    }
    set_new_prev_hash_mining: SetNewPrevHash => mining_sv2::SetNewPrevHash {
        channel_id, job_id, prev_hash, min_ntime, nbits,
    }
    set_target: SetTarget => mining_sv2::SetTarget { channel_id, maximum_target }
    set_custom_mining_job: SetCustomMiningJob => mining_sv2::SetCustomMiningJob {
        channel_id, request_id, token, version, prev_hash, min_ntime, nbits,
        coinbase_tx_version, coinbase_prefix, coinbase_tx_input_n_sequence,
        coinbase_tx_outputs, coinbase_tx_locktime, merkle_path,
    }
    set_custom_mining_job_success: SetCustomMiningJobSuccess => mining_sv2::SetCustomMiningJobSuccess {
        channel_id, request_id, job_id,
    }
    set_custom_mining_job_error: SetCustomMiningJobError => mining_sv2::SetCustomMiningJobError {
        channel_id, request_id, error_code,
    }
    set_group_channel: SetGroupChannel => mining_sv2::SetGroupChannel { group_channel_id, channel_ids }

    allocate_mining_job_token: AllocateMiningJobToken => job_declaration_sv2::AllocateMiningJobToken {
        user_identifier, request_id,
    }
    allocate_mining_job_token_success: AllocateMiningJobTokenSuccess => job_declaration_sv2::AllocateMiningJobTokenSuccess {
        request_id, mining_job_token, coinbase_outputs,
    }
    provide_missing_transactions: ProvideMissingTransactions => job_declaration_sv2::ProvideMissingTransactions {
        request_id, unknown_tx_position_list,
    }
    provide_missing_transactions_success: ProvideMissingTransactionsSuccess => job_declaration_sv2::ProvideMissingTransactionsSuccess {
        request_id, transaction_list,
    }
    declare_mining_job: DeclareMiningJob => job_declaration_sv2::DeclareMiningJob {
        request_id, mining_job_token, version, coinbase_tx_prefix, coinbase_tx_suffix,
        wtxid_list, excess_data,
    }
    declare_mining_job_success: DeclareMiningJobSuccess => job_declaration_sv2::DeclareMiningJobSuccess {
        request_id, new_mining_job_token,
    }
    declare_mining_job_error: DeclareMiningJobError => job_declaration_sv2::DeclareMiningJobError {
        request_id, error_code, error_details,
    }
    push_solution: PushSolution => job_declaration_sv2::PushSolution {
        extranonce, prev_hash, nonce, ntime, nbits, version,
    }

    coinbase_output_constraints: CoinbaseOutputConstraints => template_distribution_sv2::CoinbaseOutputConstraints {
        coinbase_output_max_additional_size, coinbase_output_max_additional_sigops,
    }
    new_template: NewTemplate => template_distribution_sv2::NewTemplate {
        template_id, future_template, version, coinbase_tx_version, coinbase_prefix,
        coinbase_tx_input_sequence, coinbase_tx_value_remaining, coinbase_tx_outputs_count,
        coinbase_tx_outputs, coinbase_tx_locktime, merkle_path,
    }
    set_new_prev_hash_tdp: SetNewPrevHashTdp => template_distribution_sv2::SetNewPrevHash {
        template_id, prev_hash, header_timestamp, n_bits, target,
    }
    request_transaction_data: RequestTransactionData => template_distribution_sv2::RequestTransactionData {
        template_id,
    }
    request_transaction_data_success: RequestTransactionDataSuccess => template_distribution_sv2::RequestTransactionDataSuccess {
        template_id, excess_data, transaction_list,
    }
    request_transaction_data_error: RequestTransactionDataError => template_distribution_sv2::RequestTransactionDataError {
        template_id, error_code,
    }
    submit_solution: SubmitSolution => template_distribution_sv2::SubmitSolution {
        template_id, version, header_timestamp, header_nonce, coinbase_tx,
    }

    request_extensions: RequestExtensions => extensions_sv2::RequestExtensions {
        request_id, requested_extensions,
    }
    request_extensions_success: RequestExtensionsSuccess => extensions_sv2::RequestExtensionsSuccess {
        request_id, supported_extensions,
    }
    request_extensions_error: RequestExtensionsError => extensions_sv2::RequestExtensionsError {
        request_id, unsupported_extensions, required_extensions,
    }
}
