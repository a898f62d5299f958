//! Property round trips: every typed message, written as a line and read back, is the same
//! message; through the codec too, cut at any point.

use bytes::BytesMut;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};
use sv2c_sv1::{
    Authorize, Body, Configure, ConfigureResult, Extranonce, Id, Notify, Reconnect, Response,
    RpcError, SetDifficulty, SetExtranonce, SetVersionMask, Submit, SubmitRef, Subscribe,
    SubscribeResult, SuggestDifficulty, Sv1Codec, Sv1Item, Sv1Message,
};
use tokio_util::codec::{Decoder, Encoder};

/// Any string, escapes and non-ASCII included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9._/-]{0,24}",
        any::<String>(),
        Just("quote \" backslash \\ newline \n tab \t".to_owned()),
    ]
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<u64>().prop_map(Id::Num),
        text().prop_map(Id::Str),
        Just(Id::Null)
    ]
}

fn extranonce() -> impl Strategy<Value = Extranonce> {
    vec(any::<u8>(), 0..=32).prop_map(|b| Extranonce::new(&b).expect("at most 32 bytes"))
}

/// A difficulty: whole, fractional, tiny and huge.
fn difficulty() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u64..1 << 40).prop_map(|d| d as f64),
        (1e-12f64..1e18),
        Just(0.5),
        Just(1e300),
    ]
}

/// A small JSON value, as unknown parameters or results carry.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z.]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Extra members of a `mining.configure` or its result (not the ones with a field).
fn extra_members() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map("info\\.[a-z-]{1,8}", json(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

fn submit() -> impl Strategy<Value = Submit> {
    (
        text(),
        text(),
        extranonce(),
        any::<u32>(),
        any::<u32>(),
        option::of(any::<u32>()),
    )
        .prop_map(
            |(worker, job_id, extranonce2, ntime, nonce, version_bits)| Submit {
                worker,
                job_id,
                extranonce2,
                ntime,
                nonce,
                version_bits,
            },
        )
}

fn configure() -> impl Strategy<Value = Configure> {
    (
        vec(text(), 0..4),
        option::of(any::<u32>()),
        option::of(any::<u32>()),
        option::of(difficulty()),
        extra_members(),
    )
        .prop_map(|(extensions, mask, min_bits, min_diff, other)| Configure {
            extensions,
            version_rolling_mask: mask,
            version_rolling_min_bit_count: min_bits,
            minimum_difficulty: min_diff,
            other_params: other,
        })
}

fn notify() -> impl Strategy<Value = Notify> {
    (
        text(),
        any::<[u8; 32]>(),
        vec(any::<u8>(), 0..200),
        vec(any::<u8>(), 0..200),
        vec(any::<[u8; 32]>(), 0..14),
        any::<[u32; 3]>(),
        any::<bool>(),
    )
        .prop_map(
            |(job_id, prevhash, coinb1, coinb2, merkle_branch, [v, b, t], clean)| Notify {
                job_id,
                prevhash,
                coinb1,
                coinb2,
                merkle_branch,
                version: v,
                nbits: b,
                ntime: t,
                clean_jobs: clean,
            },
        )
}

fn response() -> impl Strategy<Value = Response> {
    let error = (any::<i64>(), text(), json()).prop_map(|(code, message, data)| RpcError {
        code,
        message,
        data,
    });
    let subscribe = (vec((text(), text()), 0..3), extranonce(), 0usize..=32).prop_map(
        |(subscriptions, extranonce1, extranonce2_size)| {
            Response::subscribe(&SubscribeResult {
                subscriptions,
                extranonce1,
                extranonce2_size,
            })
        },
    );
    let configure = (
        option::of(any::<bool>()),
        option::of(any::<u32>()),
        option::of(any::<u32>()),
        option::of(any::<bool>()),
        extra_members(),
    )
        .prop_map(|(vr, mask, bits, md, other)| {
            Response::configure(&ConfigureResult {
                version_rolling: vr,
                version_rolling_mask: mask,
                version_rolling_min_bit_count: bits,
                minimum_difficulty: md,
                other,
            })
        });
    prop_oneof![
        json().prop_map(Response::ok),
        error.prop_map(Response::error),
        subscribe,
        configure,
    ]
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        (option::of(text()), option::of(text())).prop_map(|(user_agent, session_id)| {
            Body::Subscribe(Subscribe {
                user_agent,
                session_id,
            })
        }),
        (text(), text()).prop_map(|(name, password)| Body::Authorize(Authorize { name, password })),
        configure().prop_map(Body::Configure),
        difficulty()
            .prop_map(|difficulty| Body::SuggestDifficulty(SuggestDifficulty { difficulty })),
        Just(Body::ExtranonceSubscribe),
        submit().prop_map(Body::Submit),
        notify().prop_map(Body::Notify),
        difficulty().prop_map(|difficulty| Body::SetDifficulty(SetDifficulty { difficulty })),
        (extranonce(), 0usize..=32).prop_map(|(extranonce1, extranonce2_size)| {
            Body::SetExtranonce(SetExtranonce {
                extranonce1,
                extranonce2_size,
            })
        }),
        any::<u32>().prop_map(|mask| Body::SetVersionMask(SetVersionMask { mask })),
        (
            option::of(text()),
            option::of(any::<u16>()),
            option::of(any::<u64>())
        )
            .prop_map(|(host, port, wait_secs)| Body::Reconnect(Reconnect {
                host,
                port,
                wait_secs
            })),
        response().prop_map(Body::Response),
        ("[a-z]{1,10}\\.[a-z_]{1,12}", json()).prop_map(|(method, params)| Body::Unknown {
            method: format!("x.{method}"),
            params
        }),
    ]
}

fn message() -> impl Strategy<Value = Sv1Message> {
    (id(), any::<bool>(), body()).prop_map(|(id, jsonrpc2, body)| Sv1Message { id, jsonrpc2, body })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_message_round_trips(msg in message()) {
        let line = msg.to_line();
        prop_assert!(line.ends_with('\n'));
        prop_assert_eq!(line.matches('\n').count(), 1, "one line: {}", line);
        let back = Sv1Message::from_line(line.as_bytes())
            .unwrap_or_else(|e| panic!("{e}: {line}"));
        prop_assert_eq!(back, msg);
    }

    #[test]
    fn typed_results_round_trip(
        subs in vec(("[a-z.]{1,20}", "[0-9a-f]{1,16}"), 0..3),
        en1 in extranonce(),
        size in 0usize..=32,
        cfg in (option::of(any::<bool>()), option::of(any::<u32>()), option::of(any::<u32>()),
                option::of(any::<bool>()), extra_members()),
    ) {
        let sub = SubscribeResult { subscriptions: subs, extranonce1: en1, extranonce2_size: size };
        prop_assert_eq!(Response::subscribe(&sub).subscribe_result(), Ok(sub));
        let (vr, mask, bits, md, other) = cfg;
        let cfg = ConfigureResult {
            version_rolling: vr,
            version_rolling_mask: mask,
            version_rolling_min_bit_count: bits,
            minimum_difficulty: md,
            other,
        };
        prop_assert_eq!(Response::configure(&cfg).configure_result(), Ok(cfg));
    }

    #[test]
    fn submit_ref_reads_what_submit_writes(id in id(), jsonrpc2 in any::<bool>(), s in submit()) {
        let msg = Sv1Message { id, jsonrpc2, body: Body::Submit(s) };
        let line = msg.to_line();
        let share = SubmitRef::parse(line.as_bytes()).expect("a submit line");
        prop_assert_eq!(share.to_message(), msg);
        let mut again = BytesMut::new();
        share.encode(&mut again);
        prop_assert_eq!(&again[..], line.as_bytes());
    }

    #[test]
    fn codec_round_trips_cut_anywhere(msgs in vec(message(), 1..6), cut in any::<prop::sample::Index>()) {
        let mut codec = Sv1Codec::new().with_max_line_len(1 << 20);
        let mut wire = BytesMut::new();
        for m in &msgs {
            codec.encode(m, &mut wire).expect("encodes");
        }
        let cut = cut.index(wire.len() + 1);
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut got = Vec::new();
        while let Some(item) = codec.decode(&mut buf).expect("no I/O") {
            got.push(item);
        }
        buf.extend_from_slice(&wire[cut..]);
        while let Some(item) = codec.decode_eof(&mut buf).expect("no I/O") {
            got.push(item);
        }
        let got: Vec<_> = got
            .into_iter()
            .map(|i| match i {
                Sv1Item::Message(m) => m,
                Sv1Item::Invalid(e) => panic!("{e}"),
            })
            .collect();
        prop_assert_eq!(got, msgs);
    }
}
