//! Latency summaries in the same shape `taskdeck-cli bench --json` prints, so the runner script can
//! treat every client's output alike.

use std::time::Duration;

use serde_json::{Value, json};

/// Nearest-rank percentile: the value at rank ceil(p/100 * n), the definition that never invents
/// a latency nobody saw.
fn percentile(sorted_ms: &[f64], p: f64) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_ms.len() as f64).ceil() as usize;
    sorted_ms[rank.clamp(1, sorted_ms.len()) - 1]
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub fn latency_json(latencies: &[Duration]) -> Value {
    let mut ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    json!({
        "p50": round2(percentile(&ms, 50.0)),
        "p90": round2(percentile(&ms, 90.0)),
        "p99": round2(percentile(&ms, 99.0)),
        "max": round2(ms.last().copied().unwrap_or(0.0)),
    })
}

pub fn per_second(n: usize, took: Duration) -> f64 {
    round2(n as f64 / took.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 90.0), 7.0);
        assert_eq!(percentile(&[], 90.0), 0.0);
    }
}
