//! Markdown text shared by the report's pages: table cells and run counts.

/// `n` runs, in words: `1 run`, `3 runs`.
pub(super) fn runs(n: u64) -> String {
    if n == 1 {
        "1 run".to_owned()
    } else {
        format!("{n} runs")
    }
}

/// Text safe in a table cell: no `|`, no line breaks, no HTML tags.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}
