//! The set-up's output, captured: JSON lines parse and carry the span's fields, unrecorded
//! span fields are not printed, an invalid filter is reported and falls back to `info`.

use super::*;
use crate::vocabulary::test_log::Captured;

/// Logs a little through a logger set up with `vars`, returns what it wrote.
fn logged(vars: &[(&str, &str)], format: Option<LogFormat>) -> Result<String, LoggingError> {
    let captured = Captured::default();
    let writer = captured.clone();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let (dispatch, report) = Logging::new().default_filter("warn").format(format).build(
        env,
        move || writer.clone(),
        false,
    )?;
    tracing::dispatcher::with_default(&dispatch, || {
        if let Some(report) = report {
            report.log();
        }
        let span = tracing::info_span!(
            "bandeja.handle",
            message_id = "m-1",
            correlation_id = tracing::field::Empty
        );
        let _entered = span.enter();
        tracing::info!(attempts = 3, "an info line");
        tracing::debug!("a debug line");
    });
    Ok(captured.text())
}

#[test]
fn json_lines_are_one_object_each_with_the_span_fields() {
    let text = logged(&[("BANDEJA_LOG", "info")], Some(LogFormat::Json)).expect("set up");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = &lines[0];
    for key in ["timestamp", "level", "target", "message"] {
        assert!(line.get(key).is_some(), "{key} missing: {line}");
    }
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["message"], "an info line");
    assert_eq!(line["attempts"], 3);
    assert_eq!(line["span"]["name"], "bandeja.handle");
    assert_eq!(line["span"]["message_id"], "m-1");
    assert!(
        line["span"].get("correlation_id").is_none(),
        "an unrecorded field is not printed: {line}"
    );
}

#[test]
fn text_lines_leave_unrecorded_span_fields_out() {
    let text = logged(&[("BANDEJA_LOG", "info")], None).expect("set up");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("bandeja.handle{message_id=\"m-1\"}"),
        "{text}"
    );
    assert!(!text.contains("correlation_id"), "{text}");
}

#[test]
fn the_flag_wins_over_the_variable_and_a_bad_variable_is_an_error() {
    let text = logged(
        &[("BANDEJA_LOG", "info"), ("BANDEJA_LOG_FORMAT", "json")],
        Some(LogFormat::Text),
    )
    .expect("set up");
    assert!(!text.starts_with('{'), "{text}");
    let json = logged(
        &[("BANDEJA_LOG", "info"), ("BANDEJA_LOG_FORMAT", "JSON")],
        None,
    )
    .expect("set up");
    assert!(json.starts_with('{'), "{json}");
    let bad = logged(&[("BANDEJA_LOG_FORMAT", "jsn")], None).map(|_| ());
    let message = bad.map_err(|e| e.to_string());
    assert!(
        matches!(&message, Err(m) if m.contains("BANDEJA_LOG_FORMAT=\"jsn\"") && m.contains("`json`")),
        "{message:?}"
    );
}

#[test]
fn an_invalid_filter_is_reported_once_and_info_is_used() {
    let text = logged(&[("BANDEJA_LOG", "bandeja=verbose")], None).expect("set up");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "the report and the info line, no debug: {text}"
    );
    assert!(lines[0].contains("WARN"), "{text}");
    assert!(
        lines[0].contains("BANDEJA_LOG is not a valid log filter")
            && lines[0].contains("value=bandeja=verbose")
            && lines[0].contains("error="),
        "{text}"
    );
    assert!(lines[1].contains("an info line"), "{text}");
}

#[test]
fn unset_the_default_of_the_binary_holds() {
    let text = logged(&[], None).expect("set up");
    assert_eq!(text, "", "warn by default: {text}");
}

#[test]
fn format_names_parse_both_ways() {
    for format in [LogFormat::Text, LogFormat::Json] {
        assert_eq!(format.as_str().parse::<LogFormat>(), Ok(format));
    }
    assert!("xml".parse::<LogFormat>().is_err());
}
