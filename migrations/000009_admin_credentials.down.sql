DROP TABLE IF EXISTS admin_credentials;
