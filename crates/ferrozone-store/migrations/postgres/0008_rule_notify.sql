-- Every process sharing the database learns of committed rule writes on the channel of
-- 0003_peer_notify, `ferrozone_peers`, which thereby means "the data plane changed": its
-- listeners rebuild both the peers and the nftables table, and a rule's sources are the
-- addresses of its user's active devices, which the triggers of 0003 already announce.
-- One channel keeps one listener per process (docs/api.md section 8, "Rules").
CREATE TRIGGER rules_notify_peers
    AFTER INSERT OR UPDATE OR DELETE ON rules
    FOR EACH STATEMENT EXECUTE FUNCTION ferrozone_notify_peers();
