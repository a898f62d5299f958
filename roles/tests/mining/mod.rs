//! Mining real shares on an extended channel of our pool, for the pool's tests: open the
//! channel, take its job, find a nonce; and a client that negotiated extension 0x0002.

// Each test crate compiles this module and uses only some of it.
#![allow(dead_code)]

use futures::SinkExt;
use sv2c_binary::messages::{
    Message, OpenExtendedMiningChannel, RequestExtensions, SubmitSharesExtended,
};
use sv2c_binary::{B032, Seq064K, Str0255, U256};
use sv2c_channels::pow as work;

use crate::common::{Client, connect, next};

/// An open extended channel and the job to mine on.
pub(crate) struct Channel {
    pub(crate) id: u32,
    target: U256,
    extranonce_prefix: Vec<u8>,
    extranonce_size: usize,
    job_id: u32,
    version: u32,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    prev_hash: [u8; 32],
    ntime: u32,
    nbits: u32,
}

pub(crate) async fn open_extended(client: &mut Client, user: &str) -> Channel {
    let open = OpenExtendedMiningChannel {
        request_id: 1,
        user_identity: Str0255::try_from(user).unwrap(),
        nominal_hash_rate: 1e6,
        max_target: U256([0xff; 32]),
        min_extranonce_size: 4,
    };
    client.send(open).await.unwrap();
    let Message::OpenExtendedMiningChannelSuccess(ok) = next(client).await else {
        panic!("channel refused")
    };
    let Message::NewExtendedMiningJob(job) = next(client).await else {
        panic!("no job")
    };
    let Message::SetNewPrevHash(tip) = next(client).await else {
        panic!("no prev hash")
    };
    Channel {
        id: ok.channel_id,
        target: ok.target,
        extranonce_prefix: ok.extranonce_prefix.as_slice().to_vec(),
        extranonce_size: usize::from(ok.extranonce_size),
        job_id: job.job_id,
        version: job.version,
        prefix: job.coinbase_tx_prefix.as_bytes().to_vec(),
        suffix: job.coinbase_tx_suffix.as_bytes().to_vec(),
        prev_hash: tip.prev_hash.0,
        ntime: tip.min_ntime,
        nbits: tip.nbits,
    }
}

/// Share `seq` on `c`, mined (the job has no merkle path).
pub(crate) fn mine(c: &Channel, seq: u32) -> SubmitSharesExtended {
    let mut extranonce = vec![0u8; c.extranonce_size];
    extranonce[..4].copy_from_slice(&seq.to_le_bytes());
    let coinbase = [&c.prefix[..], &c.extranonce_prefix, &extranonce, &c.suffix].concat();
    let root = work::merkle_root(work::sha256d(&coinbase), [].iter());
    let nonce = (0u32..)
        .find(|&n| {
            let h = work::header(c.version, &c.prev_hash, &root, c.ntime, c.nbits, n);
            work::meets_target(&work::sha256d(&h), &c.target)
        })
        .unwrap();
    SubmitSharesExtended {
        channel_id: c.id,
        sequence_number: seq,
        job_id: c.job_id,
        nonce,
        ntime: c.ntime,
        version: c.version,
        extranonce: B032::try_from(&extranonce[..]).unwrap(),
    }
}

/// A client of the pool at `addr`, set up, that negotiated extension 0x0002.
pub(crate) async fn negotiated_client(addr: std::net::SocketAddr) -> Client {
    let mut client = connect(addr, 0).await;
    let request = RequestExtensions {
        request_id: 1,
        requested_extensions: Seq064K::from_slice(&[0x0002]).unwrap(),
    };
    client.send(request).await.unwrap();
    assert!(matches!(
        next(&mut client).await,
        Message::RequestExtensionsSuccess(_)
    ));
    client
}
