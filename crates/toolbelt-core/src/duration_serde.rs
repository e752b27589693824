//! Serde helpers writing a [`Duration`](std::time::Duration) as whole milliseconds, the unit
//! every toolbelt document uses (`timeout_ms`, `duration_ms`): `#[serde(with = "toolbelt_core::duration_serde::millis")]`.

/// `Duration` as milliseconds (a `u64`).
pub mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes whole milliseconds (saturating at `u64::MAX`).
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Reads milliseconds.
    ///
    /// # Errors
    /// The deserializer's, for anything but a `u64`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// `Option<Duration>` as milliseconds or `null`.
pub mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes whole milliseconds, or `null`.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    /// Reads milliseconds or `null`.
    ///
    /// # Errors
    /// The deserializer's, for anything but a `u64` or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|ms| ms.map(Duration::from_millis))
    }
}
