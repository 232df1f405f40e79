-- Owners no longer used are pruned (issue #14: `owners`, sql/022, only ever grew — by every pod,
-- host and workflow ever seen). Each owner keeps the last UTC day of a window that used it
-- (last_day): the reconciler stamps the owners of every window it writes (new ones with the
-- window's day, older ones when their day is earlier: reconciler/recon_db_owners.c), and so does
-- wl_owner_id for other writers (with today, never earlier than the window). Retention
-- (wl_prune_owners, common/retention.c) deletes the owners whose last day is before the day
-- before the results' cutoff: every result row that used them is gone by then. Writers of owner
-- numbers hold the advisory lock 'wanledger.owners' shared until they commit, the prune holds it
-- exclusively: no owner is deleted between a writer's numbering and its commit. Owners that
-- exist when this runs count as used today.
ALTER TABLE owners ADD COLUMN last_day date NOT NULL DEFAULT current_date;
CREATE INDEX owners_last_day ON owners (last_day);

-- sql/022's, holding the lock and stamping an owner it finds.
CREATE OR REPLACE FUNCTION wl_owner_id(source text, workflow text, user_name text, program text,
                                       host text, namespace text, pod text, container_name text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    d date;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('wanledger.owners'));
    SELECT o.id, o.last_day INTO n, d FROM owners o
     WHERE (o.source, o.workflow, o.user_name, o.program, o.host, o.namespace, o.pod,
            o.container_name) = (wl_owner_id.source, wl_owner_id.workflow, wl_owner_id.user_name,
            wl_owner_id.program, wl_owner_id.host, wl_owner_id.namespace, wl_owner_id.pod,
            wl_owner_id.container_name);
    IF FOUND THEN
        IF d < current_date THEN
            UPDATE owners SET last_day = current_date WHERE id = n AND last_day < current_date;
        END IF;
        RETURN n;
    END IF;
    INSERT INTO owners (source, workflow, user_name, program, host, namespace, pod,
                        container_name)
    VALUES (source, workflow, user_name, program, host, namespace, pod, container_name)
    ON CONFLICT DO NOTHING RETURNING id INTO n;
    IF n IS NULL THEN
        SELECT o.id INTO STRICT n FROM owners o
         WHERE (o.source, o.workflow, o.user_name, o.program, o.host, o.namespace, o.pod,
                o.container_name) = (wl_owner_id.source, wl_owner_id.workflow,
                wl_owner_id.user_name, wl_owner_id.program, wl_owner_id.host,
                wl_owner_id.namespace, wl_owner_id.pod, wl_owner_id.container_name);
    END IF;
    RETURN n;
END $$;

CREATE FUNCTION wl_prune_owners(results_cutoff timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('wanledger.owners'));
    DELETE FROM owners WHERE last_day < (results_cutoff AT TIME ZONE 'UTC')::date - 1;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
