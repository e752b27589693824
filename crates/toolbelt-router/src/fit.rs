//! [`ValueFit`]: whether the values a request states can fill a tool's parameters.
//!
//! An embedding or BM25 ranks near-duplicates alike ("weather by city" and "weather by
//! coordinates"); what tells them apart is often the request's values: a tool needing a
//! number, a date or an e-mail address the request does not have is the worse choice,
//! and a tool one of whose enum values the request names is the better one.

use serde_json::Value;
use toolbelt_core::ToolSpec;

/// What kinds of value a request holds, read once per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ValueFit {
    number: bool,
    date: bool,
    time: bool,
    email: bool,
    url: bool,
}

/// A value a required parameter asks for, judged from its type, name and description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Number,
    Date,
    Time,
    Email,
    Url,
}

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

const RELATIVE_DAYS: &[&str] = &[
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "weekend",
    "week",
    "month",
    "year",
];

const CJK_DATE: &[&str] = &[
    "今天", "明天", "昨天", "后天", "前天", "周", "星期", "月", "号", "日", "年",
];

impl ValueFit {
    /// Reads the kinds of value in `input`.
    pub(crate) fn of(input: &str) -> Self {
        let lower = input.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let number = input.chars().any(|c| c.is_ascii_digit());
        let date = words
            .iter()
            .any(|w| MONTHS.contains(w) || RELATIVE_DAYS.contains(w))
            || has_numeric_date(input)
            || CJK_DATE.iter().any(|d| input.contains(d));
        let time = has_clock_time(input)
            || words.iter().any(|w| matches!(*w, "am" | "pm" | "noon"))
            || input.contains('点');
        let email = words.len() > 1
            && input
                .split_whitespace()
                .any(|w| w.contains('@') && w.rsplit('@').next().is_some_and(|d| d.contains('.')));
        let url = lower.contains("http://")
            || lower.contains("https://")
            || lower.contains("www.")
            || words
                .iter()
                .any(|w| matches!(*w, "com" | "org" | "net" | "io"));
        Self {
            number,
            date,
            time,
            email,
            url,
        }
    }

    /// The tool's fit to the request, from -1 to 1: the share of its required parameters
    /// whose kind of value (number, date, time, e-mail, URL) the request lacks, taken off,
    /// and 1 added when the request names one of its enum values (see the module docs).
    /// Parameters of other kinds (most strings) say nothing.
    #[cfg(test)]
    pub(crate) fn score(&self, spec: &ToolSpec, input_lower: &str) -> f32 {
        self.fit(&ValueProfile::of(spec), input_lower)
    }

    /// [`ValueFit::score`] from the tool's [`ValueProfile`], read once per tool version.
    pub(crate) fn fit(&self, profile: &ValueProfile, input_lower: &str) -> f32 {
        let named_enum = profile.enums.iter().any(|v| contains_word(input_lower, v));
        let judged = profile.needs.len();
        let unmet = profile.needs.iter().filter(|n| !self.has(**n)).count();
        let missing = if judged == 0 {
            0.0
        } else {
            unmet as f32 / profile.required.max(judged) as f32
        };
        f32::from(u8::from(named_enum)) - missing
    }

    fn has(&self, need: Need) -> bool {
        match need {
            // A date or a time is often written with digits; a number is enough for them.
            Need::Number => self.number,
            Need::Date => self.date || self.number,
            Need::Time => self.time || self.number,
            Need::Email => self.email,
            Need::Url => self.url,
        }
    }
}

/// What [`ValueFit::fit`] reads of a tool's schema: how many parameters it requires, the
/// kinds of value the required ones ask for, and its enum values of three characters or
/// more, in lower case. Read when a tool enters the router's index, not on every request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ValueProfile {
    required: usize,
    needs: Vec<Need>,
    enums: Vec<Box<str>>,
}

impl ValueProfile {
    /// The profile of `spec`'s parameters.
    pub(crate) fn of(spec: &ToolSpec) -> Self {
        let Some(props) = spec.parameters.get("properties").and_then(Value::as_object) else {
            return Self::default();
        };
        let required = spec
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut profile = Self {
            required: required.len(),
            ..Self::default()
        };
        for (name, prop) in props {
            if let Some(values) = prop.get("enum").and_then(Value::as_array) {
                profile.enums.extend(
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|v| v.chars().count() >= 3)
                        .map(|v| lower(v).into_owned().into_boxed_str()),
                );
            }
            if required.iter().any(|r| r.as_str() == Some(name))
                && let Some(need) = need_of(name, prop)
            {
                profile.needs.push(need);
            }
        }
        profile
    }
}

/// The kind of value a parameter asks for, when its schema says so clearly.
fn need_of(name: &str, prop: &Value) -> Option<Need> {
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("");
    let format = prop.get("format").and_then(Value::as_str).unwrap_or("");
    let name = lower(name);
    match format {
        "date" | "date-time" => return Some(Need::Date),
        "time" => return Some(Need::Time),
        "email" => return Some(Need::Email),
        "uri" | "url" => return Some(Need::Url),
        _ => {}
    }
    if prop.get("enum").is_some() {
        return None;
    }
    if matches!(ty, "integer" | "number") {
        return Some(Need::Number);
    }
    let camel = |word: &str| {
        name.ends_with(word)
            || name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == word)
    };
    if camel("email") {
        Some(Need::Email)
    } else if camel("url") || camel("link") || camel("website") {
        Some(Need::Url)
    } else if camel("date") || camel("birthday") || camel("day") {
        Some(Need::Date)
    } else if camel("time") && !name.contains("zone") {
        Some(Need::Time)
    } else {
        None
    }
}

/// `text` in lower case, borrowed when it already is.
fn lower(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(char::is_uppercase) {
        std::borrow::Cow::Owned(text.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// `word` in `text` with no letter or digit on either side.
fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// `2024-08-15`, `15/08/2024`, `8/15`: digits joined by `-`, `/` or `.`.
fn has_numeric_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && matches!(w[1], b'-' | b'/') && w[2].is_ascii_digit())
}

/// `10:30`: a digit, a colon and a digit.
fn has_clock_time(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b':' && w[2].is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn spec(parameters: Value) -> ToolSpec {
        ToolSpec::builder("t")
            .description("d")
            .parameters(parameters)
            .build()
            .unwrap()
    }

    #[test]
    fn a_required_number_the_request_lacks_lowers_the_fit() {
        let by_coordinates = spec(json!({"type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"]}));
        let by_city = spec(json!({"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}));
        let input = "weather in paris";
        let fit = ValueFit::of(input);
        assert_eq!(
            (
                fit.score(&by_coordinates, input),
                fit.score(&by_city, input)
            ),
            (-1.0, 0.0)
        );
        let input = "weather at 48.85, 2.35";
        assert_eq!(ValueFit::of(input).score(&by_coordinates, input), 0.0);
    }

    #[test]
    fn a_named_enum_value_raises_the_fit() {
        let units = spec(json!({"type": "object",
            "properties": {"to": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}));
        let input = "convert 70 to celsius";
        assert_eq!(ValueFit::of(input).score(&units, input), 1.0);
        let input = "convert 70 feet to metres";
        assert_eq!(ValueFit::of(input).score(&units, input), 0.0);
    }

    #[test]
    fn dates_times_and_addresses_are_read() {
        let fit = ValueFit::of("meet on August 15 at 10:30, mail bob@example.com");
        assert_eq!(
            (fit.date, fit.time, fit.email, fit.url),
            (true, true, true, true)
        );
        assert_eq!(ValueFit::of("list my files"), ValueFit::default());
    }
}
