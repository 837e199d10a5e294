//! Generated device names: a short `adjective-noun`, as Firezone did.

use rand::seq::SliceRandom;

const ADJECTIVES: &[&str] = &[
    "amber", "azure", "bold", "brave", "brisk", "calm", "clever", "cosmic", "crisp", "dapper", "eager", "fancy",
    "fleet", "gentle", "golden", "happy", "humble", "jolly", "keen", "lively", "lucky", "merry", "mighty", "nimble",
    "noble", "plucky", "proud", "quick", "quiet", "rapid", "royal", "rustic", "shiny", "silent", "silver", "sleek",
    "snappy", "solar", "spry", "steady", "sunny", "swift", "tidy", "vivid", "witty", "zesty",
];

const NOUNS: &[&str] = &[
    "badger", "beacon", "bison", "canyon", "cedar", "comet", "condor", "coral", "falcon", "fjord", "forest", "gecko",
    "glacier", "harbor", "heron", "island", "jaguar", "kestrel", "lagoon", "lantern", "lynx", "maple", "meadow",
    "meteor", "otter", "panda", "pebble", "pine", "quasar", "raven", "reef", "river", "sparrow", "summit", "tiger",
    "tundra", "valley", "walrus", "willow", "zebra",
];

/// A random `adjective-noun`. Names are unique per user; callers retry on a clash.
pub fn generate() -> String {
    let mut rng = rand::thread_rng();
    let adjective = ADJECTIVES.choose(&mut rng).copied().unwrap_or("quick");
    let noun = NOUNS.choose(&mut rng).copied().unwrap_or("otter");
    format!("{adjective}-{noun}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_adjective_noun() {
        let name = super::generate();
        let (a, n) = name.split_once('-').unwrap();
        assert!(super::ADJECTIVES.contains(&a) && super::NOUNS.contains(&n), "{name}");
    }
}
