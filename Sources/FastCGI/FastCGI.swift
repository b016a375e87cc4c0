public enum FastCGIModule {}
