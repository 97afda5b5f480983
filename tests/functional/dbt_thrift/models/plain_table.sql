{{ config(materialized='table') }}
select cast(id as bigint) as id, concat('row ', id) as label
from (select explode(sequence(1, 10)) as id)
