//! Where the walks through every SCIM user stand (docs/design/scim.md, "Paging"). A
//! directory reads its users page after page by `startIndex`; each page read here leaves the
//! key it ended on, so that the page after it starts from the key on the order index instead
//! of skipping every row before it. A resumed page is kept only when the users are still
//! the ones its key was read from (the same generation, read with the page); any other page
//! is read by skipping, as SCIM defines it.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use super::Domain;
use crate::error::Result;
use crate::scim::{Page, Start, UsersPage};
use crate::time::Timestamp;

/// The most ends kept: a walk needs one at a time, and a few directories walk at once.
const MOST_ENDS: usize = 256;

/// The ends of the pages read, by the offset of the page after each.
#[derive(Debug, Default)]
pub(super) struct Walks {
    ends: Mutex<HashMap<u64, End>>,
}

/// The last user of a page, and the generation the page was read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct End {
    generation: u64,
    inserted_at: Timestamp,
    user_id: Uuid,
}

impl Walks {
    /// Where a page at `offset` can resume, if a page ended there.
    fn end_before(&self, offset: u64) -> Option<End> {
        self.ends.lock().unwrap_or_else(|e| e.into_inner()).get(&offset).copied()
    }

    /// Records where `page`, read at `offset`, ended.
    fn ended(&self, offset: u64, page: &UsersPage) {
        let Some(last) = page.resources.last() else { return };
        let end = End { generation: page.generation, inserted_at: last.inserted_at, user_id: last.user.id };
        let mut ends = self.ends.lock().unwrap_or_else(|e| e.into_inner());
        if ends.len() >= MOST_ENDS {
            ends.retain(|_, kept| kept.generation == end.generation);
            if ends.len() >= MOST_ENDS {
                ends.clear();
            }
        }
        ends.insert(offset + page.resources.len() as u64, end);
    }
}

impl Domain {
    /// A page of every SCIM user, resumed from the end of the page before it when that
    /// page was read here and nobody was provisioned or removed since.
    pub(super) async fn every_scim_user(&self, page: Page) -> Result<UsersPage> {
        let offset = page.offset();
        let resumed = match self.scim_walks.end_before(offset) {
            Some(end) => {
                let start = Start::After(end.inserted_at, end.user_id);
                Some(self.store().every_scim_user(page.count, start).await?)
                    .filter(|read| read.generation == end.generation)
            }
            None => None,
        };
        let read = match resumed {
            Some(read) => read,
            None => self.store().every_scim_user(page.count, Start::Offset(offset)).await?,
        };
        self.scim_walks.ended(offset, &read);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::{Role, User};
    use crate::scim::{ScimProfile, ScimUser};

    /// A page of the users numbered `numbers`, each provisioned at its number.
    fn page(generation: u64, numbers: &[u128]) -> UsersPage {
        let user = |n: u128| {
            let at = Timestamp::from_micros(n as i64);
            let mut user = User::new(format!("u{n}@example.com"), Role::Unprivileged, None, at);
            user.id = Uuid::from_u128(n);
            ScimUser { user, profile: ScimProfile::default(), inserted_at: at, updated_at: at }
        };
        UsersPage { total: 100, generation, resources: numbers.iter().map(|&n| user(n)).collect() }
    }

    #[test]
    fn a_page_leaves_its_last_user_at_the_offset_after_it() {
        let walks = Walks::default();
        walks.ended(10, &page(3, &[11, 12, 13]));
        let end = walks.end_before(13).expect("the end of the page");
        assert_eq!((end.generation, end.user_id, end.inserted_at.micros()), (3, Uuid::from_u128(13), 13));
        assert_eq!(walks.end_before(10), None);
        walks.ended(13, &page(3, &[]));
        assert_eq!(walks.end_before(13), Some(end), "an empty page leaves nothing");
    }

    #[test]
    fn a_full_map_keeps_only_the_current_generation() {
        let walks = Walks::default();
        for n in 0..MOST_ENDS as u128 {
            walks.ended(n as u64 * 10, &page(if n == 0 { 2 } else { 1 }, &[n]));
        }
        walks.ended(100_000, &page(2, &[7]));
        let ends = walks.ends.lock().unwrap();
        assert_eq!(ends.len(), 2, "the ends of generation 1 are gone");
        assert!(ends.values().all(|end| end.generation == 2));
    }
}
