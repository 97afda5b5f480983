-- What py_table reads as a source (sources.yml): a table of the schema, built first.
{{ config(materialized='table') }}
select id, concat('customer ', id) as name from (select explode(sequence(1, 40)) as id)
