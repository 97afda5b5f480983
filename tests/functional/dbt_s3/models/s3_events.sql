{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id') }}
-- version 2 changes every third row and adds 100 new ones
select id, date_add(date'2025-03-01', id % 3) as day,
       concat('v', id, case when {{ var('version') }} = 2 and id % 3 = 0 then '+' else '' end) as tag
from (select explode(sequence(1, 300 + ({{ var('version') }} - 1) * 100)) as id)
