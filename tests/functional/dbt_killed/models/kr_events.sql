-- Events of 6 days from 2025-01-01, 150 to 200 a day; the microbatch models' source (its
-- event_time gives each batch its days only).
{{ config(materialized='view', event_time='event_date') }}
select cast(d * 1000 + i as bigint) as event_id, date_add(date'2025-01-01', d) as event_date,
       cast(pmod(hash(d, i), 10000) / 100.0 as double) as amount,
       sha2(cast(d * 1000 + i as string), 256) as payload
from (select explode(sequence(0, 5)) as d)
lateral view explode(sequence(1, 150 + d * 10)) t as i
