{{ config(materialized='sized_incremental', target_file_size='128MB', small_file_limit='200MB') }}
select 1 as id
