//! (to be written)

use super::Layout;
use super::view::View;

pub(super) fn read(_view: View<'_>) -> Layout<'_> {
    Layout::default()
}

pub(super) fn doc_type(_head: &[u8]) -> Option<&'static str> {
    None
}
