{#-- The one implementation of a sized write, shared by `sized_incremental` and, for the
     models sized_takes_model accepts, dbt's own `incremental` and `table`: the engine plans
     and writes the model's rows in files of target_file_size (python_adapter.spark.write.writer, through python_adapter.api);
     this macro only wires dbt's lifecycle. always_full: every run replaces the table (dbt's
     `table`). In a microbatch batch, the batch's window goes to the engine, which replaces
     exactly that window's rows. A Python model's function runs in the dbt process on the
     profile's session, and the DataFrame it returns is written the same way. --#}
{% macro sized_materialize(always_full=false) %}
  {#-- first: over thrift / http / odbc the model fails here, before any hook or SQL runs --#}
  {%- do adapter.sized_require_session(config.get('materialized') ~ ' model ' ~ this.schema ~ '.' ~ this.identifier) -%}
  {%- do sized_validate_contract_config() -%}
  {%- do sized_require_batches(always_full) -%}
  {%- do adapter.sized_check_config(model.config, config.get('materialized') ~ ' model '
                                    ~ this.schema ~ '.' ~ this.identifier) -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set full_refresh = always_full or should_full_refresh() or existing_relation is none -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#-- an enforced contract: checked here and by the engine, before anything is written --#}
  {%- set contracted = sized_contract(compiled_code) -%}
  {%- set write_config = contracted['config'] -%}
  {%- if model.batch and not full_refresh -%}
    {%- do write_config.update({'event_time_start': model.batch.event_time_start | string,
                                'event_time_end': model.batch.event_time_end | string}) -%}
  {%- endif -%}
  {%- if model.language == 'python' -%}
    {%- set result = adapter.sized_write_python(target_relation, compiled_code, write_config,
                                                full_refresh, model.original_file_path) -%}
  {%- else -%}
    {%- set result = adapter.sized_write(target_relation, contracted['sql'], write_config,
                                         full_refresh) -%}
  {%- endif -%}

  {#-- dbt's status line and run_results.json's adapter_response: the write's figures --#}
  {%- do store_result('main', response=result['response']) -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=full_refresh) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmacro %}


{#-- Whether dbt's `incremental` / `table` of this model goes to the sized engine: a SQL or
     Python model of Parquet (file_format unset, dbt-spark's default, or parquet), not
     opted out with `sized: false`, on a profile whose method is session or connect. --#}
{% macro sized_takes_model() %}
  {#-- one rule, in the plugin (SizedSparkAdapter.sized_takes) --#}
  {{ return(adapter.sized_takes(model.config, model.language)) }}
{% endmacro %}


{#-- dbt-core cuts a microbatch model into batches, and gives each its window
     (`model.batch`), only when it is materialized='incremental'. Any other materialization
     of such a model runs once with no window: its first build would write every row of
     the source, whatever --event-time-start/--event-time-end say. So it is refused on every
     run, the first too, before a hook or the engine writes anything. --#}
{% macro sized_require_batches(always_full) %}
  {%- set strategy = (config.get('incremental_strategy') or '') | string | lower -%}
  {%- if not always_full and strategy == 'microbatch' and model.language == 'python' -%}
    {#-- dbt narrows a batch's inputs to its window when it renders SQL (ref, source); a
         Python model's dbt.ref() gets the whole table, so each batch would hold every row --#}
    {{ exceptions.raise_compiler_error(
        "incremental_strategy: 'microbatch' on a Python model (" ~ this.schema ~ "."
        ~ this.identifier ~ "): dbt filters a batch's inputs to its window only in SQL "
        ~ "models; dbt.ref() and dbt.source() give a Python model whole tables. Use "
        ~ "'insert_overwrite' with partition_by, or 'merge' with a unique_key, and filter "
        ~ "the new rows with dbt.is_incremental and dbt.this; nothing was written") }}
  {%- endif -%}
  {%- if not always_full and strategy == 'microbatch' and not model.batch -%}
    {{ exceptions.raise_compiler_error(
        "incremental_strategy: 'microbatch' on materialized='" ~ config.get('materialized')
        ~ "' (model " ~ this.schema ~ "." ~ this.identifier ~ "): dbt makes batches only "
        ~ "for materialized='incremental', so this run has no batch window. Use "
        ~ "materialized='incremental' (on a sized_spark profile the sized engine writes "
        ~ "its batches, with every sized config key); nothing was written") }}
  {%- endif -%}
{% endmacro %}
