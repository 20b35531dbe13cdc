//! Checks a receiver applies to a message before using it: protocol version and feature
//! layout. Errors are phrased for the person who reads the log.

use crate::v1::Layout;

/// The protocol version of a request, or an error naming both versions.
pub fn protocol(found: u32) -> Result<(), String> {
    if found == crate::PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(format!(
            "protocol version {found} is not this coordinator's {}: run the same keima version on \
             coordinator and workers",
            crate::PROTOCOL_VERSION
        ))
    }
}

/// The layout a message announced against the one expected, field by field.
pub fn layout(found: Option<&Layout>, expected: &Layout) -> Result<(), String> {
    let Some(f) = found else { return Err("the message has no feature layout".into()) };
    let fields = [
        ("layout id", f.layout_id as u64, expected.layout_id as u64),
        ("fe_end", f.fe_end as u64, expected.fe_end as u64),
        ("feature count", f.features, expected.features),
        ("pattern count", f.patterns, expected.patterns),
        ("pattern hash", f.pattern_hash, expected.pattern_hash),
    ];
    for (what, got, want) in fields {
        if got != want {
            return Err(format!("feature layout mismatch: {what} is {got}, the run uses {want}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_mismatch_names_the_field() {
        let a = Layout { layout_id: 1, fe_end: 1548, features: 100, patterns: 0, pattern_hash: 0 };
        assert!(layout(Some(&a), &a).is_ok());
        let b = Layout { features: 99, ..a };
        assert_eq!(
            layout(Some(&b), &a).unwrap_err(),
            "feature layout mismatch: feature count is 99, the run uses 100"
        );
        assert!(layout(None, &a).is_err());
        assert!(protocol(crate::PROTOCOL_VERSION).is_ok());
        assert!(protocol(crate::PROTOCOL_VERSION + 1).unwrap_err().contains("same keima version"));
    }
}
