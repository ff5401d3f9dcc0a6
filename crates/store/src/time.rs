//! One timestamp format everywhere: RFC 3339, UTC, milliseconds, `Z`. Fixed width, so the text
//! sorts as time does and SQL can compare it directly.

use chrono::{DateTime, SubsecRound, Utc};

pub(crate) fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(3)
}

pub(crate) fn format(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

pub(crate) fn parse(s: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc))
}

/// `#[serde(with = "taskdeck_store::rfc3339_millis")]`, for types outside the store that carry its timestamps.
pub mod rfc3339_millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        super::parse(&s).map_err(D::Error::custom)
    }
}
