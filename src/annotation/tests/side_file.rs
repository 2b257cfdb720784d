use crate::annotation::*;

#[test]
fn both_line_forms_comments_and_blank_lines() {
    let text = "# annotations for the app\n\nstep: AoS: cells[global_size(0)] -> ASTA # trailing\n\
                reduce //DL: SoA(4): v[n]\r\n   \t\nstep: AoS: more[n]\n";
    let (entries, errors) = parse_side_file(text);
    assert!(errors.is_empty(), "{errors:?}");
    let got: Vec<(&str, u32, String)> =
        entries.iter().map(|e| (e.kernel.as_str(), e.annotation.line, e.annotation.annotation.to_string())).collect();
    assert_eq!(
        got,
        [
            ("step", 3, "AoS: cells[global_size(0)] -> ASTA".to_string()),
            ("reduce", 4, "SoA(4): v[n]".to_string()),
            ("step", 6, "AoS: more[n]".to_string()),
        ]
    );
    assert_eq!(entries[0].annotation.origin, Origin::SideFile);
    assert_eq!(entries[0].annotation.column, 6);
}

#[test]
fn bad_lines_are_reported_with_their_position_and_skipped() {
    let text = "ok: AoS: f[n]\n: AoS: f[n]\n9k: AoS: f[n]\nk AoS: f[n]\nk: AoS: f[n] -> ASTA(7)\nk // AoS: f[n]\n";
    let (entries, errors) = parse_side_file(text);
    assert_eq!(entries.len(), 1);
    let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        got,
        [
            "CLAYOUT_ANNOTATIONS line 2, column 1: expected a kernel name at the start of the line",
            "CLAYOUT_ANNOTATIONS line 3, column 1: expected a kernel name at the start of the line",
            "CLAYOUT_ANNOTATIONS line 4, column 3: expected `:` or `//DL:` after the kernel name `k`",
            "CLAYOUT_ANNOTATIONS line 5, column 22: the tile must be a power of two from 1 to 1024, not 7",
            "CLAYOUT_ANNOTATIONS line 6, column 3: expected `:` or `//DL:` after the kernel name `k`",
        ]
    );
}
