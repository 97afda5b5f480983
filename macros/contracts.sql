{#-- An enforced contract on a sized_incremental model, before anything is written:
     dbt's own check of the columns' names and types (its error text: 'missing in
     definition', 'missing in contract', 'data type mismatch'), the model's columns put in
     the contract's order (as dbt's table does), and the contract's not_null constraints
     handed to the engine as `not_null_columns`, which it checks on the new rows in an
     aggregation the write already runs. Other constraint types get dbt-spark's warning.
     Returns {'sql': the SQL to write, 'config': the model config for the engine}. --#}
{% macro sized_contract(compiled_code) %}
  {%- set write_config = {} -%}
  {%- do write_config.update(model.config) -%}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {%- do get_assert_columns_equivalent(compiled_code) -%}
    {%- set compiled_code = get_select_subquery(compiled_code) -%}
    {%- set not_null = adapter.sized_not_null_columns(model.columns, model.constraints,
                                                      config.get('not_null_columns')) -%}
    {%- do write_config.update({'not_null_columns': not_null}) -%}
  {%- endif -%}
  {{ return({'sql': compiled_code, 'config': write_config}) }}
{% endmacro %}

{#-- dbt refuses an enforced contract on an `incremental` model whose on_schema_change would
     drop or ignore columns (ignore, sync_all_columns): it parses the config, and says so
     only for `incremental`. The same rule for `sized_incremental`, checked before its hooks
     or any write, with dbt's words. --#}
{% macro sized_validate_contract_config() %}
  {%- set contract_config = config.get('contract') -%}
  {%- set on_schema_change = config.get('on_schema_change') or 'ignore' -%}
  {%- if config.get('materialized') == 'sized_incremental' and contract_config
        and contract_config.enforced
        and on_schema_change not in ('append_new_columns', 'fail') -%}
    {%- do exceptions.raise_compiler_error(
          "Invalid value for on_schema_change: " ~ on_schema_change ~ ". Models "
          ~ "materialized as sized_incremental with contracts enabled must set "
          ~ "on_schema_change to 'append_new_columns' or 'fail'") -%}
  {%- endif -%}
{% endmacro %}
