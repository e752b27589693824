//! [`Stored`]: a value as the store keeps it, with its revision, times and author.

use serde::Serialize;

/// A value as the store keeps it: the value itself and the bookkeeping every stored record
/// has. It derefs to the value, so `agent.name` reads the spec's name; serialised, the value's
/// fields and the bookkeeping stand side by side in one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Stored<T> {
    /// The value.
    #[serde(flatten)]
    pub value: T,
    /// Bumped by every change; pass it back as [`Revision::Exactly`](crate::Revision) to
    /// update.
    pub revision: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Who made the last change.
    pub changed_by: String,
}

impl<T> Stored<T> {
    /// `value` as a record that was never stored: revision 0, no times.
    pub fn unstored(value: T, changed_by: impl Into<String>) -> Self {
        Self {
            value,
            revision: 0,
            created_at: 0,
            updated_at: 0,
            changed_by: changed_by.into(),
        }
    }

    /// The value without the bookkeeping.
    pub fn into_value(self) -> T {
        self.value
    }
}

impl<T> std::ops::Deref for Stored<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> std::ops::DerefMut for Stored<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::json;

    use super::Stored;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Spec {
        name: String,
    }

    #[test]
    fn a_stored_value_reads_as_the_value_and_serialises_flat() {
        let mut stored = Stored {
            value: Spec { name: "a".into() },
            revision: 2,
            created_at: 1,
            updated_at: 3,
            changed_by: "me".into(),
        };
        assert_eq!(stored.name, "a");
        stored.name = "b".into();
        assert_eq!(
            serde_json::to_value(&stored).unwrap(),
            json!({"name": "b", "revision": 2, "created_at": 1, "updated_at": 3, "changed_by": "me"})
        );
        let unstored = Stored::unstored(Spec { name: "c".into() }, "configuration");
        assert_eq!(
            (
                unstored.revision,
                unstored.created_at,
                unstored.changed_by.as_str()
            ),
            (0, 0, "configuration")
        );
        assert_eq!(unstored.into_value(), Spec { name: "c".into() });
    }
}
