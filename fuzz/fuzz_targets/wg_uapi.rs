//! The WireGuard UAPI `get=1` response parser (what `wireguard-go` answers on its socket).
//! Besides crashes, it checks that what is parsed survives a round trip through the `set`
//! request Ferrozone writes (which is itself in the `get` format).
#![no_main]

use ferrozone_gateway::uapi::{parse_peers, set_peers};
use ferrozone_gateway::Changes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(observed) = parse_peers(text) else { return };
    let peers: Vec<_> = observed.into_iter().map(|o| o.peer).collect();
    let request = set_peers(&Changes { upsert: peers.clone(), remove: Vec::new() });
    let body = request.strip_prefix("set=1\n").expect("a set request");
    let again: Vec<_> =
        parse_peers(body).expect("Ferrozone's own request parses").into_iter().map(|o| o.peer).collect();
    assert_eq!(again, peers, "the peers changed in a round trip");
});
