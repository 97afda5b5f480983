-- Every sized table holds exactly the rows of its source: none lost, none twice.
with src as (select count(*) as n, sum(amount) as s from {{ ref('stg_events') }}),
checks as (
  select 'events_range' as model, count(*) as n, sum(amount) as s from {{ ref('events_range') }}
  union all select 'events_exact', count(*), sum(amount) from {{ ref('events_exact') }}
  union all select 'events_hash', count(*), sum(amount) from {{ ref('events_hash') }}
  union all select 'events_plain', count(*), sum(amount) from {{ ref('events_plain') }}
  union all select 'events_static', count(*), sum(amount) from {{ ref('events_static') }}
  union all select 'events_by_customer', count(*), sum(amount) from {{ ref('events_by_customer') }}
  union all select 'events_incremental', count(*), sum(amount) from {{ ref('events_incremental') }}
)
select c.model, c.n, src.n as expected
from checks c cross join src
where c.n != src.n or abs(c.s - src.s) > 0.01
