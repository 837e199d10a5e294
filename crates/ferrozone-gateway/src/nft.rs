//! Ferrozone's own nftables table, `inet ferrozone`: forwarding filter (the egress rules)
//! and NAT.
//!
//! The desired table is rendered by a pure function ([`render()`]) into one complete
//! ruleset text, which [`Nft::apply`] hands to `nft -f -`: a file is one transaction, and
//! the text declares the table, deletes it and defines it again, so the table is replaced
//! atomically and nothing outside it is touched. [`Nft::read`] lists the table back as JSON
//! (without handles, set elements sorted) so a reconciler can see it changed behind its back,
//! when the ruleset generation says something was committed since its own apply
//! (`nft/generation.rs`).
//!
//! The egress rules are the elements of twenty-four named interval sets, twelve per family:
//! user rules keyed by `source . destination` (one element per tunnel address of the user),
//! group rules likewise (one per tunnel address of each member), global ones by
//! destination, each with and without `. protocol . port`, for accept and for drop. The
//! `forward` chain jumps to a regular chain `egress` for traffic entering from the WireGuard
//! interface, which looks the sets up in precedence order (user, then group, then global;
//! port before plain; accept before drop), then ends with `drop` when the
//! default is deny. Unless host filtering is off, the `input` chain sends traffic from the
//! WireGuard interface to the gateway itself through the same `egress` chain, after what the
//! tunnel needs (see [`render()`]). A packet costs at most twelve set lookups however many rules, groups and members there are,
//! and a change of the rules alone is a handful of `add element` / `delete element` lines
//! ([`Keeper`]), applied in milliseconds.
//!
//! Kernel: sets keyed by a concatenation with intervals (the user sets and the port sets)
//! need Linux 5.6.8 or later (Debian 11 has 5.10). The sets are always declared, so on an
//! older kernel `nft` refuses the whole table, with or without rules: the apply fails with
//! nft's message, `serve` stops at start-up with it (and a later pass logs it), and, the
//! text being one transaction, nothing is half-applied: no table at all on a first apply,
//! else the previous table unchanged. Ferrozone does not fall back to ignoring port rules
//! as Firezone did: a silently unenforced rule is worse than a clear refusal.
//!
//! Why the `nft` program rather than a netlink crate: the maintained Rust crates either
//! wrap libnftables through C (`nftables` builds its JSON and still runs `nft`; `rustables`
//! links libnftnl) or speak raw nf_tables netlink, where sets, interval elements and
//! concatenations must be encoded by hand. `nft -f` gives a complete ruleset per apply,
//! atomic by construction, readable in logs and testable as golden text, at the cost of
//! one process per apply (milliseconds).

mod apply;
mod delta;
mod generation;
mod json;
mod keep;
mod render;
mod sets;

pub use apply::{Nft, TableState};
pub use keep::{Keeper, Pass};
pub use render::{
    render, Egress, EgressRule, IfName, InvalidIfName, PortMatch, Protocol, Scope, Table, Verdict, TABLE,
};
