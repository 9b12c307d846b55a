-- +goose Up

-- pod_timeline's helpers add an interval to a timestamptz, which Postgres holds to be STABLE
-- (it depends on the time zone for day and month units), so as IMMUTABLE functions they could
-- never be inlined: every call, about ten per pod, ran through the SQL-function executor. As
-- STABLE (what they are) the planner inlines them into the view's expressions. Reading the
-- timelines of the bench's 1,033 pods took 35 ms before and 14 ms after. Nothing else uses
-- them (an index or a generated column would need IMMUTABLE).
ALTER FUNCTION clamp_up(timestamptz, timestamptz) STABLE;
ALTER FUNCTION seen_live(timestamptz, timestamptz) STABLE;
ALTER FUNCTION created_at_seen(timestamptz, timestamptz) STABLE;

-- +goose Down
ALTER FUNCTION clamp_up(timestamptz, timestamptz) IMMUTABLE;
ALTER FUNCTION seen_live(timestamptz, timestamptz) IMMUTABLE;
ALTER FUNCTION created_at_seen(timestamptz, timestamptz) IMMUTABLE;
