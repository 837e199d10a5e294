//! The ruleset's generation: a number the kernel moves at every nftables commit in a
//! network namespace, of any table, by anyone (`NFT_MSG_GETGEN` over nfnetlink, as `nft
//! monitor` reports it). When it is the one the keeper's own last commit produced, nothing
//! has been committed since, so the table is as that commit left it: the repair pass need
//! not list 10,000s of set elements to know (docs/design/data-plane.md, "Drift").
//!
//! One small request and its answer on a netlink socket of the namespace `nft` runs in;
//! like `nft` itself it needs `CAP_NET_ADMIN`.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context};
use rustix::net::{netlink, recv, send, socket_with, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// `NFNL_SUBSYS_NFTABLES`, the high byte of an nf_tables message type.
const SUBSYS_NFTABLES: u16 = 10;
const MSG_NEWGEN: u16 = 15;
const MSG_GETGEN: u16 = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
/// `NFTA_GEN_ID`: the generation, a big-endian u32.
const ATTR_GEN_ID: u16 = 1;
/// `struct nlmsghdr`, then `struct nfgenmsg`.
const HEADER: usize = 16;
const NFGENMSG: usize = 4;

/// A netlink socket asking one namespace for its ruleset generation.
#[derive(Debug)]
pub struct Generation {
    socket: Mutex<OwnedFd>,
    sequence: AtomicU32,
}

impl Generation {
    /// Of this process's network namespace.
    pub fn here() -> anyhow::Result<Self> {
        let socket =
            socket_with(AddressFamily::NETLINK, SocketType::RAW, SocketFlags::CLOEXEC, Some(netlink::NETFILTER))
                .context("opening a netfilter netlink socket")?;
        Ok(Self { socket: Mutex::new(socket), sequence: AtomicU32::new(1) })
    }

    /// Of the namespace `ip netns` knows as `name`: the socket is opened by a thread that
    /// enters it (a socket keeps the namespace it was made in), for tests.
    pub fn in_netns(name: &str) -> anyhow::Result<Self> {
        let path = format!("/run/netns/{name}");
        let opened = std::thread::spawn(move || -> anyhow::Result<Self> {
            let namespace = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
            let network = Some(rustix::thread::LinkNameSpaceType::Network);
            rustix::thread::move_into_link_name_space(namespace.as_fd(), network).context("entering the namespace")?;
            Self::here()
        });
        opened.join().map_err(|_| anyhow::anyhow!("the thread opening the socket panicked"))?
    }

    /// The generation now.
    pub fn read(&self) -> anyhow::Result<u32> {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let socket = self.socket.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        send(&*socket, &request(sequence), SendFlags::empty()).context("asking for the ruleset generation")?;
        let mut answer = [0u8; 512];
        loop {
            let (length, _) = recv(&*socket, &mut answer[..], RecvFlags::empty()).context("reading the generation")?;
            if let Some(generation) = generation_in(&answer[..length.min(answer.len())], sequence)? {
                return Ok(generation);
            }
        }
    }
}

/// `NFT_MSG_GETGEN`, family unspecified.
fn request(sequence: u32) -> Vec<u8> {
    let mut message = Vec::with_capacity(HEADER + NFGENMSG);
    message.extend_from_slice(&((HEADER + NFGENMSG) as u32).to_ne_bytes());
    message.extend_from_slice(&((SUBSYS_NFTABLES << 8) | MSG_GETGEN).to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&sequence.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&[0, 0, 0, 0]);
    message
}

/// The generation in the messages of `datagram` answering `sequence`; `None` when they
/// answer another request (one that timed out before).
fn generation_in(datagram: &[u8], sequence: u32) -> anyhow::Result<Option<u32>> {
    let mut rest = datagram;
    while rest.len() >= HEADER {
        let length = u32::from_ne_bytes(rest[0..4].try_into()?) as usize;
        if length < HEADER || length > rest.len() {
            bail!("a malformed netlink message");
        }
        let (message, next) = rest.split_at(length);
        rest = next.get(aligned(length) - length..).unwrap_or_default();
        let kind = u16::from_ne_bytes(message[4..6].try_into()?);
        if u32::from_ne_bytes(message[8..12].try_into()?) != sequence {
            continue;
        }
        if kind == NLMSG_ERROR {
            let code =
                message.get(HEADER..HEADER + 4).map_or(0, |c| i32::from_ne_bytes(c.try_into().unwrap_or_default()));
            bail!("the kernel refused the generation request: {}", std::io::Error::from_raw_os_error(-code));
        }
        if kind == (SUBSYS_NFTABLES << 8) | MSG_NEWGEN {
            return attribute(message.get(HEADER + NFGENMSG..).unwrap_or_default(), ATTR_GEN_ID)
                .map(Some)
                .context("no generation in the kernel's answer");
        }
    }
    Ok(None)
}

/// The big-endian u32 attribute `wanted` among netlink attributes.
fn attribute(mut attributes: &[u8], wanted: u16) -> Option<u32> {
    while attributes.len() >= 4 {
        let length = usize::from(u16::from_ne_bytes(attributes[0..2].try_into().ok()?));
        let kind = u16::from_ne_bytes(attributes[2..4].try_into().ok()?) & 0x3fff;
        if length < 4 || length > attributes.len() {
            return None;
        }
        if kind == wanted && length == 8 {
            return Some(u32::from_be_bytes(attributes[4..8].try_into().ok()?));
        }
        attributes = attributes.get(aligned(length)..).unwrap_or_default();
    }
    None
}

/// Netlink's 4-byte alignment.
fn aligned(length: usize) -> usize {
    length.div_ceil(4) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(sequence: u32, generation: u32) -> Vec<u8> {
        let mut attributes = Vec::new();
        for (kind, value) in [(ATTR_GEN_ID, generation.to_be_bytes()), (2, 77u32.to_be_bytes())] {
            attributes.extend_from_slice(&8u16.to_ne_bytes());
            attributes.extend_from_slice(&kind.to_ne_bytes());
            attributes.extend_from_slice(&value);
        }
        let mut message = request(sequence);
        message[4..6].copy_from_slice(&((SUBSYS_NFTABLES << 8) | MSG_NEWGEN).to_ne_bytes());
        message.extend_from_slice(&attributes);
        let length = message.len() as u32;
        message[0..4].copy_from_slice(&length.to_ne_bytes());
        message
    }

    #[test]
    fn the_generation_is_read_from_the_answer_to_this_request() {
        assert_eq!(generation_in(&answer(7, 4242), 7).unwrap(), Some(4242));
        assert_eq!(generation_in(&answer(6, 4242), 7).unwrap(), None, "an earlier request's answer");
        let mut two = answer(6, 1);
        two.extend(answer(7, 2));
        assert_eq!(generation_in(&two, 7).unwrap(), Some(2));
        assert!(generation_in(&answer(7, 1)[..12], 7).unwrap().is_none(), "too short for a message");
        let mut refused = request(7);
        refused[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        refused.extend_from_slice(&(-1i32).to_ne_bytes());
        refused[0..4].copy_from_slice(&24u32.to_ne_bytes());
        assert!(generation_in(&refused, 7).unwrap_err().to_string().contains("refused"));
    }
}
