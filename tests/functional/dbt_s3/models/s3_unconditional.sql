{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          location_root='s3a://nocond/warehouse') }}
select id, date_add(date'2025-03-01', id % 3) as day
from (select explode(sequence(1, 300)) as id)
