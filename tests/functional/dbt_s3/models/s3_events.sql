{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id') }}
select id, date_add(date'2025-03-01', id % 3) as day, concat('v', id) as tag
from (select explode(sequence(1, 300)) as id)
