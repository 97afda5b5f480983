-- The upserted table holds every source event exactly once; re-sent rows carry the update.
with u as (select event_id, amount from {{ ref('events_upsert') }}),
s as (select event_id, amount from {{ ref('stg_events') }})
select 'count' as problem, (select count(*) from u) as got, (select count(*) from s) as expected
where (select count(*) from u) != (select count(*) from s)
   or (select count(distinct event_id) from u) != (select count(*) from s)
union all
select 'amount', u.event_id, s.event_id from u join s using (event_id)
where abs(u.amount - s.amount) > 1.0001
