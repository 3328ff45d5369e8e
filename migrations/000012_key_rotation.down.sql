DROP TABLE IF EXISTS api_key_rotations;
DROP TRIGGER IF EXISTS api_keys_hash_not_previous ON api_keys;
DROP FUNCTION IF EXISTS api_keys_hash_not_previous();
DROP TABLE IF EXISTS api_key_previous_values;
