//! The durable task store (see docs/ARCHITECTURE.md).
