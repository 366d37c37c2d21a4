//! (to be written)

use super::Layout;
use super::view::View;

pub(super) fn read(_view: View<'_>) -> Layout<'_> {
    Layout::default()
}

pub(super) fn is_classic(_head: &[u8]) -> bool {
    false
}
