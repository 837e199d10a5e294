//! Who is acting, and from where, for the events the store appends: set once per request
//! (or command, or job) and read by the store when it records a change, so that no store
//! method needs an actor parameter.
//!
//! The HTTP layer opens a [`scope`] per request with the origin (client address, request
//! id), and authentication names the actor in it ([`set_actor`]) once it knows who is
//! asking. The CLI runs its command in a scope with [`Actor::cli`]; background jobs with
//! [`Actor::system`]. A store reads [`current`] when its write method is called, before
//! it hands the work to another task or thread (a task-local does not follow a spawn).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use super::{Actor, ActorKind, Entry, NewAuditEvent, Origin, Subject};

/// The actor and origin of the work in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub actor: Actor,
    pub origin: Origin,
}

impl Context {
    pub fn new(actor: Actor, origin: Origin) -> Self {
        Self { actor, origin }
    }

    /// An event now, by this actor from this origin.
    pub fn event(&self, action: &str, subject: Subject) -> NewAuditEvent {
        NewAuditEvent::new(self.actor.clone(), action, subject, self.origin.clone())
    }

    /// The event of `entry` now, by this actor from this origin.
    pub fn record(&self, entry: Entry) -> NewAuditEvent {
        self.event(entry.action, entry.subject).with_changes(entry.changes)
    }

    /// This context for the sign-in of `user_id`: a request nobody authenticated yet acts
    /// as the user signing in ([`ActorKind::User`]).
    pub fn signing_in(mut self, user_id: uuid::Uuid) -> Self {
        if self.actor.kind == ActorKind::Anonymous {
            self.actor = Actor { kind: ActorKind::User, id: None, user_id: Some(user_id) };
        }
        self
    }
}

tokio::task_local! {
    static CONTEXT: Arc<Mutex<Context>>;
}

/// Runs `work` with `context` as the [`current`] one.
pub async fn scope<F: Future>(context: Context, work: F) -> F::Output {
    CONTEXT.scope(Arc::new(Mutex::new(context)), work).await
}

/// The future of a [`scope`] whose work is made by `start` (a service's `call`), for a
/// caller that must name the future's type: `start` runs with `context` as the current
/// one too, and so does every poll of what it returns.
pub fn scoped<F: Future>(context: Context, start: impl FnOnce() -> F) -> Scoped<F> {
    let context = Arc::new(Mutex::new(context));
    let work = CONTEXT.sync_scope(context.clone(), start);
    CONTEXT.scope(context, work)
}

/// The future [`scoped`] returns.
pub type Scoped<F> = tokio::task::futures::TaskLocalFuture<Arc<Mutex<Context>>, F>;

/// The context of the work in progress. Outside any [`scope`]: Ferrozone itself
/// ([`Actor::system`]) from nowhere.
pub fn current() -> Context {
    CONTEXT
        .try_with(|context| context.lock().unwrap_or_else(PoisonError::into_inner).clone())
        .unwrap_or_else(|_| Context::new(Actor::system(), Origin::default()))
}

/// Names the actor of the current scope (authentication does, once it knows who asks);
/// outside any scope it does nothing.
pub fn set_actor(actor: Actor) {
    let _ = CONTEXT.try_with(|context| context.lock().unwrap_or_else(PoisonError::into_inner).actor = actor);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::ActorKind;

    #[tokio::test]
    async fn the_actor_named_inside_a_scope_is_current_there_and_nowhere_else() {
        let origin = Origin { client_address: Some("192.0.2.1".into()), request_id: Some("r1".into()) };
        let seen = scope(Context::new(Actor::anonymous(), origin.clone()), async {
            set_actor(Actor { kind: ActorKind::Token, id: Some("t".into()), user_id: None });
            current()
        })
        .await;
        assert_eq!(seen.actor.kind, ActorKind::Token);
        assert_eq!(seen.origin, origin);
        assert_eq!(current().actor, Actor::system(), "outside a scope: the system");
        set_actor(Actor::cli());
        assert_eq!(current().actor, Actor::system(), "naming an actor outside a scope does nothing");
    }

    #[test]
    fn event_ids_are_time_ordered() {
        let context = Context::new(Actor::system(), Origin::default());
        let ids: Vec<_> = (0..100).map(|_| context.event("device.created", Subject::new("device", "d")).id).collect();
        assert!(ids.iter().all(|id| id.get_version() == Some(uuid::Version::SortRand)), "{ids:?}");
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "each id sorts after the one before: {ids:?}");
    }
}
