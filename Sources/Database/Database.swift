public enum DatabaseModule {}
