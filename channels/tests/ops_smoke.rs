//! Pseudo-random byte strings drive a server channel (templates, tips, installed jobs,
//! shares, targets) and the extranonce allocator: nothing may panic, every refused share
//! has a spec error code. A stable, fixed-seed smoke test of job and share handling.

use sv2c_binary::messages::{NewTemplate, SetNewPrevHashTdp};
use sv2c_binary::{B064K, B0255, Seq0255, U256};
use sv2c_channels::server::{
    CoinbaseOutput, ExtranoncePrefixAllocator, Job, ServerChannel, Share, VERSION_ROLLING_MASK,
};

/// Reads values from a byte string, yielding zeros once it is used up.
struct Bytes<'a>(&'a [u8]);
impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn vec(&mut self, max: usize) -> Vec<u8> {
        let n = usize::from(self.u8()) % (max + 1);
        (0..n).map(|_| self.u8()).collect()
    }
    fn u256(&mut self) -> U256 {
        let mut out = [0u8; 32];
        out.iter_mut().for_each(|b| *b = self.u8());
        U256(out)
    }
}

fn run(input: &[u8]) -> (u64, u64) {
    let mut b = Bytes(input);
    let rollable = usize::from(b.u8() % 33);
    let outputs = vec![CoinbaseOutput {
        value: u64::from(b.u32()),
        script_pubkey: vec![0x51],
    }];
    let mut channel = if b.u8() % 2 == 0 {
        ServerChannel::standard(1, vec![0; 8], U256([0xff; 32]), 0, outputs)
    } else {
        ServerChannel::extended(
            1,
            vec![0; 4],
            rollable,
            U256([0xff; 32]),
            VERSION_ROLLING_MASK,
            outputs,
        )
    }
    .with_dedup_budget(usize::from(b.u8() % 8));
    let mut allocator = ExtranoncePrefixAllocator::new(b.vec(3), usize::from(b.u8() % 3));
    let (mut ok, mut refused) = (0, 0);
    while !b.0.is_empty() {
        match b.u8() % 7 {
            0 => {
                let path: Vec<U256> = (0..b.u8() % 4).map(|_| b.u256()).collect();
                let t = NewTemplate {
                    template_id: u64::from(b.u8() % 4),
                    future_template: b.u8() % 2 == 0,
                    version: b.u32(),
                    coinbase_tx_version: b.u32(),
                    coinbase_prefix: B0255::try_from(b.vec(120)).unwrap(),
                    coinbase_tx_input_sequence: b.u32(),
                    coinbase_tx_value_remaining: u64::from(b.u32()),
                    coinbase_tx_outputs_count: b.u32(),
                    coinbase_tx_outputs: B064K::try_from(b.vec(64)).unwrap(),
                    coinbase_tx_locktime: b.u32(),
                    merkle_path: Seq0255::from_slice(&path).unwrap(),
                };
                if let Ok(job) = channel.on_new_template(&t) {
                    channel
                        .extended_job_message(&job, t.future_template)
                        .unwrap();
                    channel.standard_job_message(&job, t.future_template);
                }
            }
            1 => {
                let tip = SetNewPrevHashTdp {
                    template_id: u64::from(b.u8() % 4),
                    prev_hash: b.u256(),
                    header_timestamp: b.u32(),
                    n_bits: b.u32(),
                    target: b.u256(),
                };
                channel.on_set_new_prev_hash(&tip);
            }
            2 => channel.install_active_job(Job {
                job_id: u32::from(b.u8()),
                template_id: 0,
                version: b.u32(),
                coinbase_prefix: b.vec(40),
                coinbase_suffix: b.vec(40),
                merkle_path: (0..b.u8() % 3).map(|_| b.u256().0).collect(),
                min_ntime: None,
            }),
            3 | 4 => {
                let extranonce = b.vec(33);
                let share = Share {
                    job_id: u32::from(b.u8() % 24),
                    nonce: b.u32(),
                    ntime: b.u32(),
                    version: b.u32(),
                    extranonce: &extranonce,
                };
                match channel.validate_share(&share) {
                    Ok(_) => ok += 1,
                    Err(e) => {
                        assert!(!e.code().is_empty());
                        refused += 1;
                    }
                }
            }
            5 => channel.set_target(b.u256()),
            _ => {
                if b.u8() % 2 == 0 {
                    let _ = allocator.allocate();
                } else {
                    allocator.release(&b.vec(4));
                }
            }
        }
    }
    (ok, refused)
}

#[test]
fn random_operations_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..3_000 {
        let len = (state % 2048) as usize;
        let input: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let (o, r) = run(&input);
        ok += o;
        refused += r;
    }
    assert!(refused > 0);
    eprintln!("accepted {ok}, refused {refused}");
}
