//! (to be written)

use super::Layout;
use super::view::View;

pub(super) fn read(_view: View<'_>) -> Layout<'_> {
    Layout::default()
}
