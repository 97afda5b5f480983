{{ config(materialized='table', partition_by=['day']) }}
select id, date_add(date'2025-03-01', id % 3) as day
from (select explode(sequence(1, 300)) as id)
