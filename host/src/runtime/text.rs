//! Text a plugin passes, cut to a cap before the host keeps or shows it.

/// Cuts `s` to at most `max` bytes on a character boundary, marking the cut.
pub(crate) fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate("héllo".to_owned(), 2), "h…");
        assert_eq!(truncate("short".to_owned(), 10), "short");
    }
}
