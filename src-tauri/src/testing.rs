//! Test fixtures shared by the shell's unit tests.

use serde_json::{Value, json};
use taskdeck_engine::TaskRecord;

/// A working task on the demo server, with `over`'s members replacing the defaults.
pub fn record(over: Value) -> TaskRecord {
    let mut base = json!({
        "id": "t1", "server": "demo", "tool": "generate_report", "arguments": {}, "idempotency_key": "k",
        "mode": "task", "era": null, "remote_task_id": null, "status": "working", "status_message": null,
        "progress": null, "question": null, "answer": null, "result": null, "error": null, "ttl_ms": null,
        "poll_interval_ms": null, "created_at": "2026-11-30T10:00:00.000Z", "updated_at": "2026-11-30T10:00:00.000Z"
    });
    let (Value::Object(base_members), Value::Object(over)) = (&mut base, over) else {
        panic!("record overrides must be a JSON object");
    };
    base_members.extend(over);
    serde_json::from_value(base).expect("the overrides keep the record valid")
}
