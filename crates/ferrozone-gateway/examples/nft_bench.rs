//! Benchmarks of the `inet ferrozone` table with Firezone-style egress rules, run as root in
//! a network namespace of its own (created and deleted here):
//!
//! 1. rendering and fully applying 10,000 rules for 1,000 users (every user with 1 device,
//!    then with 3; IPv4 and IPv6 destinations, a quarter of them port rules), first onto no
//!    table and then replacing it, and reading the table back (`Nft::read`);
//! 2. one rule changed 200 times through the [`Keeper`] (each pass a delta): the time from
//!    `set_table` to the pass's end, when the kernel has the change.
//!
//! Wall-clock times suffer when other work shares the CPUs; `*_cpu_ms` figures are the CPU
//! time of this process and of the `nft` processes it ran (user and system, the kernel's
//! work in nft's system calls included), from `/proc/self/stat` (10 ms ticks, so given as
//! means over many runs).
//!
//! `cargo run --release -p ferrozone-gateway --example nft_bench`; prints `name value` lines.
//! `BENCH_USERS` (default 1000) and `BENCH_RULES_PER_USER` (default 10) change the size.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use ferrozone_gateway::nft::{
    render, Egress, EgressRule, IfName, Keeper, Nft, Pass, PortMatch, Protocol, Scope, Table, Verdict,
};

const ROUNDS: usize = 5;
const CHANGES: usize = 200;

/// A network namespace deleted on drop.
struct Namespace(String);

impl Namespace {
    fn new() -> anyhow::Result<Self> {
        let name = format!("fznftbench-{}", std::process::id());
        let status = Command::new("ip").args(["netns", "add", &name]).status().context("running ip")?;
        ensure!(status.success(), "`ip netns add {name}` failed (root is needed)");
        Ok(Self(name))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "delete", &self.0]).status();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let users = env("BENCH_USERS", 1000);
    let per_user = env("BENCH_RULES_PER_USER", 10);
    let ns = Namespace::new()?;
    let nft = Nft::in_netns(&ns.0);
    println!("rules {}", users * per_user);
    println!("users {users}");
    for devices in [1, 3] {
        let table = table(users, per_user, devices)?;
        let text = render(&table);
        println!("devices_per_user_{devices}_elements {}", text.lines().filter(|l| l.ends_with(',')).count());
        full(&nft, &table, devices).await?;
        changes(&nft, table, devices).await?;
        nft.remove().await?;
    }
    Ok(())
}

/// Rendering, applying onto no table and over the same table, and reading back.
async fn full(nft: &Nft, table: &Table, devices: usize) -> anyhow::Result<()> {
    let (mut render_times, mut first, mut replace, mut read) = (vec![], vec![], vec![], vec![]);
    let (mut apply_cpu, mut read_cpu) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        nft.remove().await?;
        let started = Instant::now();
        let text = render(table);
        render_times.push(started.elapsed());
        first.push(timed(nft.apply(&text)).await?);
        let (started, cpu) = (Instant::now(), cpu_time()?);
        nft.apply(&render(table)).await?;
        replace.push(started.elapsed());
        apply_cpu += cpu_time()? - cpu;
        let cpu = cpu_time()?;
        read.push(timed(nft.read()).await?);
        read_cpu += cpu_time()? - cpu;
    }
    let prefix = format!("devices_per_user_{devices}");
    println!("{prefix}_render_ms {:.1}", ms(median(&mut render_times)));
    println!("{prefix}_full_apply_first_ms {:.1}", ms(median(&mut first)));
    println!("{prefix}_full_apply_replace_ms {:.1}", ms(median(&mut replace)));
    println!("{prefix}_full_apply_replace_max_ms {:.1}", ms(*replace.iter().max().unwrap_or(&Duration::ZERO)));
    println!("{prefix}_full_apply_replace_cpu_ms {:.1}", ms(apply_cpu) / ROUNDS as f64);
    println!("{prefix}_read_ms {:.1}", ms(median(&mut read)));
    println!("{prefix}_read_cpu_ms {:.1}", ms(read_cpu) / ROUNDS as f64);
    Ok(())
}

/// One rule's destination changed, one pass each.
async fn changes(nft: &Nft, mut table: Table, devices: usize) -> anyhow::Result<()> {
    let mut keeper = Keeper::new(nft.clone(), table.clone());
    let started = Instant::now();
    ensure!(keeper.reconcile().await? == Pass::Full);
    println!("devices_per_user_{devices}_keeper_first_pass_ms {:.1}", ms(started.elapsed()));
    let mut times = Vec::with_capacity(CHANGES);
    let mut cpu = Duration::ZERO;
    for change in 0..CHANGES {
        let index = (change * 7919) % table.egress.rules.len();
        let rule = &mut table.egress.rules[index];
        rule.destination = match rule.destination.addr() {
            IpAddr::V4(_) => format!("30.{}.{}.0/24", change / 256, change % 256).parse()?,
            IpAddr::V6(_) => format!("2001:db9:{change:x}::/48").parse()?,
        };
        let next = table.clone();
        let (started, cpu_before) = (Instant::now(), cpu_time()?);
        keeper.set_table(next);
        ensure!(keeper.reconcile().await? == Pass::Delta, "change {change} was not a delta");
        times.push(started.elapsed());
        cpu += cpu_time()? - cpu_before;
    }
    times.sort();
    let prefix = format!("devices_per_user_{devices}_change");
    println!("{prefix}_p50_ms {:.1}", ms(times[CHANGES / 2]));
    println!("{prefix}_p99_ms {:.1}", ms(times[CHANGES * 99 / 100 - 1]));
    println!("{prefix}_max_ms {:.1}", ms(times[CHANGES - 1]));
    println!("{prefix}_cpu_mean_ms {:.1}", ms(cpu) / CHANGES as f64);
    let started = Instant::now();
    ensure!(keeper.reconcile().await? == Pass::Unchanged, "the patched reading differs from the table");
    println!("devices_per_user_{devices}_unchanged_pass_ms {:.1}", ms(started.elapsed()));
    Ok(())
}

/// `users` users with `devices` devices each (an IPv4 and an IPv6 address per device) and
/// `per_user` rules each: a third IPv6, a quarter port rules, half drop; no two overlap.
fn table(users: usize, per_user: usize, devices: usize) -> anyhow::Result<Table> {
    let mut rules = Vec::with_capacity(users * per_user);
    for user in 0..users {
        let sources = (0..devices)
            .flat_map(|device| {
                let n = u32::try_from(user * devices + device).unwrap_or(u32::MAX);
                [
                    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | n)),
                    IpAddr::V6(Ipv6Addr::from(0xfd00_u128 << 112 | u128::from(n))),
                ]
            })
            .collect();
        let scope = Scope::Sources(sources);
        for rule in 0..per_user {
            let k = user * per_user + rule;
            let destination = if k.is_multiple_of(3) {
                format!("2001:db8:{k:x}::/48")
            } else {
                format!("20.{}.{}.0/24", k / 256 % 256, k % 256)
            };
            let ports = (k.is_multiple_of(4)).then(|| {
                let first = u16::try_from(1000 + k % 500).unwrap_or(1000);
                let protocol = if k.is_multiple_of(8) { Protocol::Tcp } else { Protocol::Udp };
                PortMatch { protocol, first, last: first + u16::try_from(k % 3 * 10).unwrap_or(0) }
            });
            let verdict = if k.is_multiple_of(2) { Verdict::Drop } else { Verdict::Accept };
            rules.push(EgressRule { scope: scope.clone(), destination: destination.parse()?, verdict, ports });
        }
    }
    Ok(Table {
        tunnel_networks: vec!["10.0.0.0/16".parse()?, "fd00::/112".parse()?],
        masquerade_on: Some(IfName::parse("eth0")?),
        egress: Egress { wireguard: IfName::parse("wg0")?, rules, default: Verdict::Accept },
        filter_host: true,
    })
}

async fn timed<T>(future: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    future.await?;
    Ok(started.elapsed())
}

/// CPU time so far of this process and of its waited-for children (user + system).
fn cpu_time() -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after_name = stat.rsplit_once(')').context("/proc/self/stat")?.1;
    // Fields 14 to 17 of proc(5): utime, stime, cutime, cstime, in clock ticks (100 a second).
    let ticks: u64 = after_name.split_whitespace().skip(11).take(4).filter_map(|f| f.parse::<u64>().ok()).sum();
    Ok(Duration::from_millis(ticks * 10))
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
