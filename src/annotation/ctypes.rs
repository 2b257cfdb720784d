//! What clayout needs to know about OpenCL C scalar types: which are integers (extents may
//! read them), how wide they are, and how to decode a kernel argument's bytes.

/// An OpenCL C integer type. `size` is `None` for the address-sized types (`size_t`...), whose
/// width is the device's and shows only in the argument's byte count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntType {
    pub size: Option<u8>,
    pub signed: bool,
}

impl IntType {
    /// The value of a kernel argument set with `clSetKernelArg(k, i, bytes.len(), bytes)`, in
    /// the host's byte order as OpenCL requires.
    pub fn decode(self, bytes: &[u8]) -> Result<u64, String> {
        let ok_len = match self.size {
            Some(n) => bytes.len() == usize::from(n),
            None => bytes.len() == 4 || bytes.len() == 8,
        };
        if !ok_len {
            let want = self.size.map_or("4 or 8".to_string(), |n| n.to_string());
            return Err(format!("argument has {} bytes, its type needs {want}", bytes.len()));
        }
        let little = cfg!(target_endian = "little");
        let top = if little { bytes.last() } else { bytes.first() };
        let fill = if self.signed && top.is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 };
        let mut buf = [fill; 8];
        if little {
            buf[..bytes.len()].copy_from_slice(bytes);
        } else {
            buf[8 - bytes.len()..].copy_from_slice(bytes);
        }
        let raw = u64::from_ne_bytes(buf);
        if self.signed && (raw as i64) < 0 {
            return Err(format!("argument is negative ({})", raw as i64));
        }
        Ok(raw)
    }
}

/// Decodes an integer scalar argument of the type named `type_name` (as written in the kernel,
/// e.g. `uint`, `unsigned long`, `size_t`).
pub fn decode_int_arg(type_name: &str, bytes: &[u8]) -> Result<u64, String> {
    match int_type(type_name) {
        Some(t) => t.decode(bytes),
        None => Err(format!("`{type_name}` is not an integer type")),
    }
}

/// The integer type named by `name`, word order free as in C (`unsigned long int`).
pub fn int_type(name: &str) -> Option<IntType> {
    let words: Vec<&str> = name.split_whitespace().collect();
    if let [one] = words[..] {
        let (size, signed) = match one {
            "char" => (Some(1), true),
            "uchar" => (Some(1), false),
            "short" => (Some(2), true),
            "ushort" => (Some(2), false),
            "int" | "signed" => (Some(4), true),
            "uint" | "unsigned" => (Some(4), false),
            "long" => (Some(8), true),
            "ulong" => (Some(8), false),
            "size_t" | "uintptr_t" => (None, false),
            "ptrdiff_t" | "intptr_t" => (None, true),
            _ => return None,
        };
        return Some(IntType { size, signed });
    }
    let count = |w: &str| words.iter().filter(|&&x| x == w).count();
    let (uns, sig, chr, shrt, lng, int) =
        (count("unsigned"), count("signed"), count("char"), count("short"), count("long"), count("int"));
    if words.is_empty() || uns + sig + chr + shrt + lng + int != words.len() || uns + sig > 1 || int > 1 || chr > 1 {
        return None;
    }
    // OpenCL's long is 64 bits and it has no long long.
    let size = match (chr, shrt, lng) {
        (1, 0, 0) if int == 0 => 1,
        (0, 1, 0) => 2,
        (0, 0, 0) => 4,
        (0, 0, 1) => 8,
        _ => return None,
    };
    Some(IntType { size: Some(size), signed: uns == 0 })
}

/// Byte size of a builtin scalar type (integers of fixed width, `half`, `float`, `double`):
/// the word of an SoA array of such elements.
pub fn scalar_size(name: &str) -> Option<u32> {
    match name.trim() {
        "half" => Some(2),
        "float" => Some(4),
        "double" => Some(8),
        other => int_type(other).and_then(|t| t.size).map(u32::from),
    }
}

/// Builtin vector types (`float4`, `uchar16`): neither a scalar word nor a structure.
pub fn is_vector_type(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let n = &name[base.len()..];
    matches!(n, "2" | "3" | "4" | "8" | "16")
        && matches!(
            base,
            "char" | "uchar" | "short" | "ushort" | "int" | "uint" | "long" | "ulong" | "half" | "float" | "double"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_type_names() {
        let t = |s, n| Some(IntType { size: Some(n), signed: s });
        assert_eq!(int_type("uint"), t(false, 4));
        assert_eq!(int_type("unsigned int"), t(false, 4));
        assert_eq!(int_type("int  unsigned"), t(false, 4));
        assert_eq!(int_type("unsigned long int"), t(false, 8));
        assert_eq!(int_type("long"), t(true, 8));
        assert_eq!(int_type("signed char"), t(true, 1));
        assert_eq!(int_type("unsigned short"), t(false, 2));
        assert_eq!(int_type("size_t"), Some(IntType { size: None, signed: false }));
        for bad in ["float", "long long", "unsigned signed", "int int", "", "Foo", "char short"] {
            assert_eq!(int_type(bad), None, "{bad}");
        }
    }

    #[test]
    fn decoding_arguments() {
        assert_eq!(decode_int_arg("int", &7i32.to_ne_bytes()), Ok(7));
        assert_eq!(decode_int_arg("uint", &u32::MAX.to_ne_bytes()), Ok(u64::from(u32::MAX)));
        assert_eq!(decode_int_arg("ulong", &u64::MAX.to_ne_bytes()), Ok(u64::MAX));
        assert_eq!(decode_int_arg("short", &300i16.to_ne_bytes()), Ok(300));
        assert_eq!(decode_int_arg("uchar", &[200]), Ok(200));
        assert_eq!(decode_int_arg("size_t", &5u32.to_ne_bytes()), Ok(5));
        assert_eq!(decode_int_arg("size_t", &5u64.to_ne_bytes()), Ok(5));
        assert!(decode_int_arg("int", &(-3i32).to_ne_bytes()).unwrap_err().contains("negative (-3)"));
        assert!(decode_int_arg("char", &[0xff]).unwrap_err().contains("negative (-1)"));
        assert!(decode_int_arg("long", &i64::MIN.to_ne_bytes()).is_err());
        assert!(decode_int_arg("int", &[1, 2]).unwrap_err().contains("2 bytes"));
        assert!(decode_int_arg("size_t", &[1, 2]).is_err());
        assert!(decode_int_arg("float", &[0; 4]).is_err());
    }

    #[test]
    fn sizes_and_vectors() {
        assert_eq!(scalar_size("float"), Some(4));
        assert_eq!(scalar_size("double"), Some(8));
        assert_eq!(scalar_size("ulong"), Some(8));
        assert_eq!(scalar_size("size_t"), None);
        assert_eq!(scalar_size("float4"), None);
        assert!(is_vector_type("float4") && is_vector_type("uchar16"));
        assert!(!is_vector_type("float5") && !is_vector_type("float") && !is_vector_type("cell4"));
    }
}
