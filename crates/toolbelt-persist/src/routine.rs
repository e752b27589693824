//! Routines: prompts an agent runs on a schedule, behind the [`RoutineStore`] trait
//! the `routine` tool of `toolbelt-tools` uses; `toolbelt-store` keeps them in SQLite
//! or Postgres and its scheduler runs them. A [`Schedule`] is a cron expression (5 fields, or 6 with
//! seconds first) in an IANA time zone, or a fixed interval in seconds.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::{BoxFuture, ToolError};

use crate::memory::format_ms;

/// The forms a schedule may take, for error messages.
pub const SCHEDULE_FORMS: &str = "a cron expression of 5 fields (`minute hour day-of-month month day-of-week`, \
e.g. `0 9 * * *`) or 6 fields (seconds first, e.g. `*/30 * * * * *`), or an alias \
(@hourly, @daily, @weekly, @monthly, @yearly), with an IANA time zone such as `Asia/Shanghai` \
or `UTC`; or an interval of at least 1 second";

/// Largest interval: 366 days.
pub const MAX_INTERVAL_SECS: u64 = 366 * 24 * 3600;

/// When a routine runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Schedule {
    /// A cron expression evaluated in a time zone.
    Cron {
        /// 5 or 6 fields, or an `@` alias.
        expr: String,
        /// IANA name, e.g. `Asia/Shanghai`.
        tz: String,
    },
    /// Every `seconds`, counted from when the routine was created.
    Interval {
        /// At least 1.
        seconds: u64,
    },
}

/// A failure of a [`RoutineStore`] or of a schedule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoutineError {
    /// An argument was wrong.
    #[error("{pointer}: {reason}")]
    Invalid {
        /// JSON pointer of the argument.
        pointer: String,
        /// What was wrong and what is allowed.
        reason: String,
    },
    /// No routine has this name.
    #[error("no routine named `{name}`; call routine with action `list` to see them")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// A routine already has this name.
    #[error("a routine named `{name}` already exists; pick another name or delete it first")]
    AlreadyExists {
        /// The name.
        name: String,
    },
    /// The storage failed.
    #[error("the routines could not be read or written")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl RoutineError {
    /// A [`RoutineError::Invalid`].
    pub fn invalid(pointer: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            pointer: pointer.into(),
            reason: reason.into(),
        }
    }
}

impl From<RoutineError> for ToolError {
    fn from(err: RoutineError) -> Self {
        match err {
            RoutineError::Invalid { pointer, reason } => {
                ToolError::invalid_argument(pointer, reason)
            }
            RoutineError::Backend(ref source) => ToolError::retryable(format!("{err}: {source}")),
            RoutineError::NotFound { .. } | RoutineError::AlreadyExists { .. } => {
                ToolError::failed(err.to_string())
            }
        }
    }
}

fn parse_cron(expr: &str) -> Result<Cron, RoutineError> {
    let expr = expr.trim();
    let fields = expr.split_whitespace().count();
    let alias = expr.starts_with('@') && fields == 1;
    if !alias && !(5..=6).contains(&fields) {
        return Err(RoutineError::invalid(
            "/cron",
            format!("`{expr}` has {fields} fields; use {SCHEDULE_FORMS}"),
        ));
    }
    Cron::from_str(expr).map_err(|e| {
        RoutineError::invalid(
            "/cron",
            format!("`{expr}` is not valid ({e}); use {SCHEDULE_FORMS}"),
        )
    })
}

fn parse_tz(tz: &str) -> Result<Tz, RoutineError> {
    tz.trim().parse::<Tz>().map_err(|_| {
        RoutineError::invalid(
            "/timezone",
            format!("`{tz}` is not a known IANA time zone; use a name such as `Asia/Shanghai`, `Europe/Berlin` or `UTC`"),
        )
    })
}

impl Schedule {
    /// A cron schedule, checked.
    ///
    /// # Errors
    /// [`RoutineError::Invalid`] naming `/cron` or `/timezone` and the allowed forms.
    pub fn cron(expr: &str, tz: &str) -> Result<Self, RoutineError> {
        parse_cron(expr)?;
        let tz = parse_tz(tz)?;
        Ok(Self::Cron {
            expr: expr.trim().to_owned(),
            tz: tz.name().to_owned(),
        })
    }

    /// An interval schedule, checked.
    ///
    /// # Errors
    /// [`RoutineError::Invalid`] naming `/every_seconds` for 0 or more than a year.
    pub fn every(seconds: u64) -> Result<Self, RoutineError> {
        if seconds == 0 || seconds > MAX_INTERVAL_SECS {
            return Err(RoutineError::invalid(
                "/every_seconds",
                format!(
                    "{seconds} is not allowed; an interval is 1 to {MAX_INTERVAL_SECS} seconds, or use {SCHEDULE_FORMS}"
                ),
            ));
        }
        Ok(Self::Interval { seconds })
    }

    /// The first occurrence strictly after `after_ms`; `anchor_ms` is when an interval
    /// routine was created (occurrences are `anchor + k × interval`). `None` when a cron
    /// expression never matches again.
    ///
    /// # Errors
    /// [`RoutineError::Invalid`] when a stored schedule no longer parses.
    pub fn next_after(&self, after_ms: i64, anchor_ms: i64) -> Result<Option<i64>, RoutineError> {
        match self {
            Self::Interval { seconds } => {
                let step = i64::try_from(*seconds)
                    .unwrap_or(i64::MAX / 2)
                    .saturating_mul(1000);
                if after_ms < anchor_ms {
                    return Ok(Some(anchor_ms.saturating_add(step)));
                }
                let k = (after_ms - anchor_ms) / step + 1;
                Ok(Some(anchor_ms.saturating_add(k.saturating_mul(step))))
            }
            Self::Cron { expr, tz } => {
                let cron = parse_cron(expr)?;
                let tz = parse_tz(tz)?;
                let Some(start) = tz.timestamp_millis_opt(after_ms).single() else {
                    return Ok(None);
                };
                Ok(cron
                    .find_next_occurrence(&start, false)
                    .ok()
                    .map(|t| t.timestamp_millis()))
            }
        }
    }

    /// `cron 0 9 * * * (Asia/Shanghai)` or `every 60s`.
    pub fn describe(&self) -> String {
        match self {
            Self::Cron { expr, tz } => format!("cron {expr} ({tz})"),
            Self::Interval { seconds } => format!("every {seconds}s"),
        }
    }
}

/// What to do with occurrences that fell due while no scheduler ran.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MissedPolicy {
    #[default]
    Skip, // Record them as missed, run none.
    RunOnce, // Run the latest missed one unless one ran on time; record the others as missed.
    RunAll,  // Run every one, oldest first.
}

impl MissedPolicy {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::RunOnce => "run_once",
            Self::RunAll => "run_all",
        }
    }

    /// Parses the stored spelling.
    ///
    /// # Errors
    /// [`RoutineError::Invalid`] naming the allowed values.
    pub fn parse(text: &str) -> Result<Self, RoutineError> {
        match text {
            "skip" => Ok(Self::Skip),
            "run_once" => Ok(Self::RunOnce),
            "run_all" => Ok(Self::RunAll),
            other => Err(RoutineError::invalid(
                "/missed",
                format!("`{other}` is not one of skip, run_once, run_all"),
            )),
        }
    }
}

/// A routine to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RoutineDraft {
    /// Unique name (1–128 bytes, no control characters).
    pub name: String,
    /// The agent that runs the prompt.
    pub agent: String,
    /// What the agent is asked each time.
    pub prompt: String,
    /// When.
    pub schedule: Schedule,
    /// Missed occurrences.
    pub missed: MissedPolicy,
}

impl RoutineDraft {
    /// A draft with the `skip` policy.
    pub fn new(
        name: impl Into<String>,
        agent: impl Into<String>,
        prompt: impl Into<String>,
        schedule: Schedule,
    ) -> Self {
        Self {
            name: name.into(),
            agent: agent.into(),
            prompt: prompt.into(),
            schedule,
            missed: MissedPolicy::Skip,
        }
    }

    /// Sets the missed-occurrence policy.
    #[must_use]
    pub fn with_missed(mut self, missed: MissedPolicy) -> Self {
        self.missed = missed;
        self
    }

    /// Checks the name, agent and prompt.
    ///
    /// # Errors
    /// [`RoutineError::Invalid`] naming the field.
    pub fn validate(&self) -> Result<(), RoutineError> {
        let name = self.name.trim();
        if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
            return Err(RoutineError::invalid(
                "/name",
                "a routine name is 1 to 128 bytes without control characters",
            ));
        }
        if self.agent.trim().is_empty() {
            return Err(RoutineError::invalid(
                "/agent",
                "name the agent that runs the routine",
            ));
        }
        if self.prompt.trim().is_empty() || self.prompt.len() > 16 * 1024 {
            return Err(RoutineError::invalid(
                "/prompt",
                "the prompt is 1 byte to 16 KiB of text",
            ));
        }
        Ok(())
    }
}

/// A stored routine as the tool and CLI show it (built by store implementations).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineInfo {
    /// Name.
    pub name: String,
    /// The agent that runs it.
    pub agent: String,
    /// The prompt.
    pub prompt: String,
    /// When.
    pub schedule: Schedule,
    /// Missed occurrences.
    pub missed: MissedPolicy,
    /// Paused routines do not run (their occurrences are not recorded).
    pub paused: bool,
    /// Next occurrence, Unix ms (`None` when paused or never again).
    pub next_due_ms: Option<i64>,
    /// A run asked for with `run now` and not yet started.
    pub run_requested: bool,
    /// Status of the latest recorded occurrence, if any.
    pub last_status: Option<String>,
    /// When it was created, Unix ms.
    pub created_at_ms: i64,
}

/// Where routines are kept.
pub trait RoutineStore: Send + Sync + 'static {
    /// Creates a routine; its first occurrence is the first one after now.
    fn create<'a>(
        &'a self,
        draft: RoutineDraft,
    ) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>>;

    /// Every routine, by name.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RoutineInfo>, RoutineError>>;

    /// Pauses (`true`) or resumes (`false`); resuming skips what fell due while paused.
    fn set_paused<'a>(
        &'a self,
        name: &'a str,
        paused: bool,
    ) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>>;

    /// Deletes a routine and its schedule (recorded runs stay).
    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), RoutineError>>;

    /// Asks the scheduler to run the routine at its next tick, outside its schedule.
    fn run_now<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<RoutineInfo, RoutineError>>;
}

/// One line per routine: name, schedule, state, next run.
pub fn describe_routine(info: &RoutineInfo) -> String {
    let state = if info.paused { "paused" } else { "active" };
    let next = info.next_due_ms.map_or_else(|| "-".to_owned(), format_ms);
    format!(
        "{}: {} [{state}] next {next}; agent {}: {}",
        info.name,
        info.schedule.describe(),
        info.agent,
        info.prompt
    )
}

/// Unix ms of a UTC date-time, for tests and hosts.
pub fn utc_ms(year: i32, month: u32, day: u32, hour: u32, min: u32, sec: u32) -> Option<i64> {
    Utc.with_ymd_and_hms(year, month, day, hour, min, sec)
        .single()
        .map(|t: DateTime<Utc>| t.timestamp_millis())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn cron_in_a_time_zone() {
        let s = Schedule::cron("0 9 * * *", "Asia/Shanghai").unwrap();
        // 2026-11-22 00:30 UTC = 08:30 in Shanghai: next is 09:00 Shanghai = 01:00 UTC.
        let after = utc_ms(2026, 11, 22, 0, 30, 0).unwrap();
        assert_eq!(
            s.next_after(after, 0).unwrap(),
            utc_ms(2026, 11, 22, 1, 0, 0)
        );
        // Exactly at an occurrence: the next one is a day later.
        let at = utc_ms(2026, 11, 22, 1, 0, 0).unwrap();
        assert_eq!(s.next_after(at, 0).unwrap(), utc_ms(2026, 11, 23, 1, 0, 0));
        let six = Schedule::cron("*/30 * * * * *", "UTC").unwrap();
        assert_eq!(six.next_after(at, 0).unwrap(), Some(at + 30_000));
    }

    #[test]
    fn intervals_count_from_the_anchor() {
        let s = Schedule::every(60).unwrap();
        assert_eq!(s.next_after(0, 0).unwrap(), Some(60_000));
        assert_eq!(s.next_after(59_999, 0).unwrap(), Some(60_000));
        assert_eq!(s.next_after(60_000, 0).unwrap(), Some(120_000));
        assert_eq!(s.next_after(-5, 10).unwrap(), Some(60_010));
    }

    #[test]
    fn bad_schedules_name_the_allowed_forms() {
        let err = Schedule::cron("0 9 * *", "UTC").unwrap_err().to_string();
        assert!(
            err.starts_with("/cron: `0 9 * *` has 4 fields; use a cron expression of 5 fields"),
            "{err}"
        );
        let err = Schedule::cron("0 25 * * *", "UTC").unwrap_err().to_string();
        assert!(err.starts_with("/cron: `0 25 * * *` is not valid"), "{err}");
        assert!(err.contains("IANA time zone"), "{err}");
        let err = Schedule::cron("0 9 * * * * 2030", "UTC")
            .unwrap_err()
            .to_string();
        assert!(err.contains("has 7 fields"), "{err}");
        let err = Schedule::cron("0 9 * * *", "Mars/Olympus")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/timezone: `Mars/Olympus` is not a known IANA time zone"),
            "{err}"
        );
        let err = Schedule::every(0).unwrap_err().to_string();
        assert!(
            err.starts_with("/every_seconds: 0 is not allowed; an interval is 1 to"),
            "{err}"
        );
        assert!(Schedule::cron("@daily", "UTC").is_ok());
    }
}
