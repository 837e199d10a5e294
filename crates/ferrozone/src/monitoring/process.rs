//! The process's own figures (CPU, memory, files, threads), read at each scrape and written
//! in the Prometheus text format after the recorder's metrics.
//!
//! Written here rather than through the recorder: its counters hold whole numbers, and
//! `process_cpu_seconds_total` must be a counter (the `_total` suffix says so, and
//! `promtool check metrics` holds a gauge with it to be an error) that keeps fractions of a
//! second.

use std::fmt::Write as _;

/// Appends the process's metrics, each with its `# HELP` and `# TYPE` lines, to `out`.
/// A figure the operating system does not give is left out.
pub(super) fn render(out: &mut String) {
    let m = metrics_process::collector::collect();
    let counter = |out: &mut String, name: &str, help: &str, value: Option<f64>| {
        write_one(out, name, "counter", help, value);
    };
    let gauge = |out: &mut String, name: &str, help: &str, value: Option<u64>| {
        write_one(out, name, "gauge", help, value.map(|v| v as f64));
    };
    counter(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", m.cpu_seconds_total);
    gauge(out, "process_open_fds", "Number of open file descriptors.", m.open_fds);
    gauge(out, "process_max_fds", "Maximum number of open file descriptors.", m.max_fds);
    gauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", m.virtual_memory_bytes);
    gauge(
        out,
        "process_virtual_memory_max_bytes",
        "Maximum amount of virtual memory available in bytes.",
        m.virtual_memory_max_bytes,
    );
    gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.", m.resident_memory_bytes);
    gauge(
        out,
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        m.start_time_seconds,
    );
    gauge(out, "process_threads", "Number of OS threads in the process.", m.threads);
}

fn write_one(out: &mut String, name: &str, kind: &str, help: &str, value: Option<f64>) {
    let Some(value) = value else { return };
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    // Writing to a String cannot fail.
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_a_counter_with_its_fractions() {
        let mut out = String::from("# TYPE ferrozone_devices gauge\nferrozone_devices 3\n");
        render(&mut out);
        assert!(out.starts_with("# TYPE ferrozone_devices gauge\nferrozone_devices 3\n"), "{out}");
        assert!(out.contains("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "), "{out}");
        assert!(out.contains("# TYPE process_resident_memory_bytes gauge\n"), "{out}");
    }
}
