//! CRC32C with LevelDB's masking, used by every checksum on disk.
//!
//! A CRC stored next to the data it covers is masked so that computing the CRC
//! of a string that itself contains embedded CRCs stays well distributed
//! (`docs/format/wal.md`, "Checksums").

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends `crc` with `data`.
#[inline]
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The masked form stored on disk.
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_and_mask_round_trip() {
        // RFC 3720 test vector: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        let c = crc32c(b"foo");
        assert_ne!(mask(c), c);
        assert_eq!(unmask(mask(c)), c);
        assert_eq!(extend(crc32c(b"he"), b"llo"), crc32c(b"hello"));
    }
}
