	
"serve