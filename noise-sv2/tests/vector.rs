//! SV2-WIRE §4.9: the deterministic handshake and first frames, byte for byte, and the
//! §4.6 authority key string vector.

use bytes::BytesMut;
use sv2c_noise::{
    AuthorityKeypair, AuthorityPublicKey, Certificate, EphemeralKey, Initiator, Responder,
    StaticKeypair,
};

fn h<const N: usize>(s: &str) -> [u8; N] {
    hex::decode(s).unwrap().try_into().unwrap()
}

const IE_SECRET: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const IE_ELL: &str = "f5962c51828e028546105360511635b8b63c6f94ea73d04e26f24eab63931c8e0ec1e646c878fced6c65171fd3997a6d0b8b1b15590876e846a51620cb096c59";
const RE_SECRET: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const RE_ELL: &str = "a35af1ea1dd30c1defe8e6349ee7d5b8bcaf292f9e834e077d043d5f781d1a1d90486b1ff7845917843489a5a19444865db2b5f3cfdfc2e561cef4f52c59c5fe";
const RS_SECRET: &str = "3333333333333333333333333333333333333333333333333333333333333333";
const RS_ELL: &str = "ed412fd076b3d84901884715e81590ed5a18d7ff4d3544768b44ed41012e06a74c323da5fab6d0181c12cc9b7b4148e2b0b87ca8f6e11a477dce0a75e7f5a6a2";
const RS_XONLY: &str = "3c72addb4fdf09af94f0c94d7fe92a386a7e70cf8a1d85916386bb2535c7b1b1";
const AUTH_SECRET: &str = "4444444444444444444444444444444444444444444444444444444444444444";
const AUTH_XONLY: &str = "2c0b7cf95324a07d05398b240174dc0c2be444d96b159aa6c7f7b1e668680991";
const CERT: &str = "000000f1536510ff53652772dc305ddc113d03eecd124bdea317a70b772015b1bec49b763356e0adc03cc765037e5bc99d169a77f80d8c067a35d40d7685e90fc7d14f1218ba33179d39";
const SIG: &str = "2772dc305ddc113d03eecd124bdea317a70b772015b1bec49b763356e0adc03cc765037e5bc99d169a77f80d8c067a35d40d7685e90fc7d14f1218ba33179d39";
const ACT1: &str = IE_ELL;
const ACT2: &str = "a35af1ea1dd30c1defe8e6349ee7d5b8bcaf292f9e834e077d043d5f781d1a1d90486b1ff7845917843489a5a19444865db2b5f3cfdfc2e561cef4f52c59c5fe40661107134d88d99d44ec6e97914aa17f8d3882a3e7e6dd059824bbfbe8f50a8c9815f3e0febe182ac5ec87901bff95452d07d61ddcad7d4ddf43922d7099bbe26037b9471ed3951067166bcdb21f8a17bde65e3b90608f0193209906eac47d600aeb8967865d2652d2c12f962b2ea2d738bbe155c382dad1020342c4a2cca59ddb5f7f5d2cd45363a2c9c3864424ad308f2ab096775f10e3a11a92c111f828a3a68b0bae0a17c95ab4";
const SETUP_CONNECTION: &str =
    "0000002600000002000200060000000c706f6f6c2e6578616d706c65050d0461636d65036877310366773100";
const SETUP_HEADER_CT: &str = "99a9e8ad0dcc75682f6992c84c81a0706bfa061ab129";
const SETUP_PAYLOAD_CT: &str = "10bc904c94d2bc3b5044d190937d2c5f85eee0b8ce60da5b048a2279e68156379499a4ab51443526ff23861d367bb9e78d992a56217e";
const SUCCESS: &str = "000001060000020000000000";
const SUCCESS_CT: &str =
    "ec808793fad629ab1708f832bbf313ba6f68092978061c9be593dafeba47a8009426dcbbc57f0eaefbddbb2f";

const VALID_FROM: u32 = 1_700_000_000;
const NOT_VALID_AFTER: u32 = 1_700_003_600;

fn authority() -> AuthorityKeypair {
    AuthorityKeypair::from_secret_bytes(h(AUTH_SECRET)).unwrap()
}

fn server_static() -> StaticKeypair {
    StaticKeypair::from_parts(h(RS_SECRET), h(RS_ELL)).unwrap()
}

fn certificate() -> Certificate {
    Certificate::sign_with_aux_rand(
        &authority(),
        &server_static().x_only_public_key(),
        VALID_FROM,
        NOT_VALID_AFTER,
        &[0; 32],
    )
}

#[test]
fn keys_match_the_vector() {
    assert_eq!(server_static().x_only_public_key(), h::<32>(RS_XONLY));
    assert_eq!(authority().public_key().to_bytes(), h::<32>(AUTH_XONLY));
    assert_eq!(server_static().ellswift(), &h::<64>(RS_ELL));
}

#[test]
fn certificate_matches_the_vector() {
    let cert = certificate();
    assert_eq!(cert.version(), 0);
    assert_eq!(cert.valid_from(), VALID_FROM);
    assert_eq!(cert.not_valid_after(), NOT_VALID_AFTER);
    assert_eq!(cert.signature(), &h::<64>(SIG));
    assert_eq!(cert.to_bytes(), h::<74>(CERT));
    cert.verify(&authority().public_key(), &h(RS_XONLY), VALID_FROM + 1)
        .unwrap();
}

#[test]
fn handshake_and_first_frames_match_the_vector() {
    let initiator = Initiator::with_ephemeral(
        Some(AuthorityPublicKey::from_bytes(h(AUTH_XONLY)).unwrap()),
        EphemeralKey::from_parts(h(IE_SECRET), h(IE_ELL)).unwrap(),
    );
    let (act1, initiator) = initiator.step_1();
    assert_eq!(act1, h::<64>(ACT1));

    let responder = Responder::new(server_static(), certificate());
    let (act2, server) = responder
        .step_with_ephemeral(
            &act1,
            EphemeralKey::from_parts(h(RE_SECRET), h(RE_ELL)).unwrap(),
        )
        .unwrap();
    assert_eq!(hex::encode(act2), ACT2);

    let client = initiator.step_2(&act2, VALID_FROM).unwrap();
    assert_eq!(client.handshake_hash(), server.handshake_hash());
    assert_eq!(client.server_static_key(), Some(h(RS_XONLY)));
    assert_eq!(client.server_certificate(), Some(&certificate()));
    assert_eq!(server.server_certificate(), None);

    let (mut client_tx, mut client_rx) = client.split();
    let (mut server_tx, mut server_rx) = server.split();

    // initiator -> responder with k1, nonces 0 (header) and 1 (payload)
    let setup = hex::decode(SETUP_CONNECTION).unwrap();
    let mut wire = BytesMut::new();
    client_tx.encrypt_frame(&setup, &mut wire).unwrap();
    assert_eq!(wire.len(), 76);
    assert_eq!(hex::encode(&wire[..22]), SETUP_HEADER_CT);
    assert_eq!(hex::encode(&wire[22..]), SETUP_PAYLOAD_CT);
    let mut input = &wire[..];
    assert_eq!(server_rx.decrypt(&mut input).unwrap(), Some(setup));

    // responder -> initiator with k2, nonces 0 and 1
    let success = hex::decode(SUCCESS).unwrap();
    let mut wire = BytesMut::new();
    server_tx.encrypt_frame(&success, &mut wire).unwrap();
    assert_eq!(hex::encode(&wire), SUCCESS_CT);
    let mut input = &wire[..];
    assert_eq!(client_rx.decrypt(&mut input).unwrap(), Some(success));
}

#[test]
fn authority_key_string_vector() {
    let bytes: [u8; 32] = [
        118, 99, 112, 0, 151, 156, 28, 17, 175, 12, 48, 11, 205, 140, 127, 228, 134, 16, 252, 233,
        185, 193, 30, 61, 174, 227, 90, 224, 176, 138, 116, 85,
    ];
    assert_eq!(
        hex::encode(bytes),
        "76637000979c1c11af0c300bcd8c7fe48610fce9b9c11e3daee35ae0b08a7455"
    );
    let key = AuthorityPublicKey::from_bytes(bytes).unwrap();
    let s = "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh";
    assert_eq!(key.to_base58check(), s);
    assert_eq!(key.to_string(), s);
    assert_eq!(s.parse::<AuthorityPublicKey>().unwrap(), key);
}
